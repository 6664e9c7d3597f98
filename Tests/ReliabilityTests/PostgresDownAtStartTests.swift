import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// A store kept by a PostgreSQL server that is down when modeld starts (a host that boots modeld
/// before its database) is served once the server is back, with no restart: calls in the gap
/// fail UNAVAILABLE saying so. A store whose server goes down later is still listed, with why
/// its history token is missing, beside the stores that answer.
@Suite struct PostgresDownAtStartTests {
    static func trip(_ name: String) -> ObjectEdit {
        .insert(
            entity: "Trip",
            attributes: [
                "name": .string(name), "destination": .string(name),
                "startDate": .date(Timestamp(Date())), "endDate": .date(Timestamp(Date())),
            ],
            relationships: [:], id: nil)
    }

    /// Asks `call` again, each time it fails UNAVAILABLE, until it answers (at most 60 s).
    static func onceAvailable<T: Sendable>(_ call: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                return try await call()
            } catch let error as ModelError where error.code == .unavailable && ContinuousClock.now < deadline {
                await Task.yield()
            }
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aStoreWhoseServerWasDownAtStartIsServedOnceItIsBack() async throws {
        try await PostgresCluster.with { cluster in
            let daemon = try await ModeldProcess.launch()
            do {
                try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                    _ = try await client.createStore(
                        "far", backend: nil, url: cluster.freshStoreURL(), schema: SampleTrips.schema)
                    _ = try await client.apply([Self.trip("Lisbon")], in: "far")
                }
                _ = try await daemon.stop()
                try await cluster.halt()
                try await daemon.relaunch(arguments: [])
                try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                    let count = FetchDescriptor(entityName: "Trip", resultType: .count)
                    let early = await modelError { _ = try await client.fetch(count, in: "far") }
                    #expect(early?.code == .unavailable, "\(String(describing: early))")
                    #expect(
                        early?.message.contains("its server unreachable since modeld started") == true,
                        "\(String(describing: early))")
                    // The other stores are served meanwhile.
                    #expect(try await client.stores().map(\.name) == ["default"])

                    try await cluster.resume()
                    let counted = try await Self.onceAvailable { try await client.fetch(count, in: "far") }
                    #expect(counted == .count(1))
                    _ = try await client.apply([Self.trip("Porto")], in: "far")

                    // Down again: the list still answers, naming why it lacks the store's token.
                    try await cluster.halt()
                    let listed = try await client.stores()
                    #expect(listed.map(\.name) == ["default", "far"])
                    let far = try #require(listed.last)
                    #expect(far.historyToken == nil)
                    #expect(far.unavailable?.contains("PostgreSQL") == true, "\(String(describing: far.unavailable))")
                    #expect(listed.first?.unavailable == nil)
                    try await cluster.resume()
                    let again = try await Self.onceAvailable { try await client.fetch(count, in: "far") }
                    #expect(again == .count(2))
                }
            } catch {
                print("modeld's log:\n\(daemon.log.suffix(4_000))")
                await daemon.remove()
                throw error
            }
            await daemon.remove()
        }
    }
}
