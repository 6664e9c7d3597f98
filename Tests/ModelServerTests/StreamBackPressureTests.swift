import Foundation
import FramedTransport
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// A client whose code takes a stream's responses more slowly than the daemon sends them holds a
/// bounded number of them: on the framed transport such a stream runs on a connection of its
/// own, which stops reading its socket while more than 4 MiB wait (the daemon's writes then
/// wait), and reads again once the code has caught up. Nothing is lost or reordered, and the
/// client's other calls go on meanwhile. (Before, every response was read off the socket at
/// once: a fetch handed over batch by batch to a slow consumer held the rest of the result.)
@Suite struct StreamBackPressureTests {
    /// 12,000 objects of about 2 KB: a result of some 25 MB.
    static let objects = 12_000
    static let schema = try! Schema(
        json: """
            {"entities": [{"name": "Blob", "attributes": [
              {"name": "name", "type": "string"}, {"name": "body", "type": "string"}]}]}
            """)

    static func name(_ object: ObjectSnapshot) -> String? {
        if case .string(let name) = object["name"] { return name }
        return nil
    }

    /// Whether a connection of `flow`'s stops reading before `limit` passes (the limit only
    /// bounds a failing run: a passing one goes on at the pause).
    static func paused(_ flow: InboundFlowStatistics, within limit: Duration) async -> Bool {
        let paused = TestEvent()
        flow.whenPaused { paused.signal() }
        return await paused.wait(timeout: limit)
    }

    static func makeStore(_ client: DaemonClient) async throws {
        try await client.createStore("big", schema: schema)
        let body = String(repeating: "x", count: 2_000)
        for start in stride(from: 0, to: objects, by: 2_000) {
            let edits = (start..<start + 2_000).map { index in
                ObjectEdit.insert(
                    entity: "Blob",
                    attributes: ["name": .string(String(format: "b%06d", index)), "body": .string(body)],
                    relationships: [:], id: nil)
            }
            try await client.apply(edits, in: "big")
        }
    }

    @Test func aSlowBatchConsumerHoldsABoundedPartOfTheResult() async throws {
        try await TestDaemon.withDaemon(configure: { $0.maximumMessageSize = 8 * 1024 * 1024 }) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .framed) { client in
                try await Self.makeStore(client)
                let flow = try #require(client.streamFlow)
                let (gate, open) = AsyncStream.makeStream(of: Void.self)
                let names = Mutex<[String]>([])
                let fetch = Task {
                    try await client.fetch(
                        FetchDescriptor(entityName: "Blob", sortBy: [SortDescriptor("name")]), in: "big",
                        batchSize: 200
                    ) { batch in
                        let first = names.withLock { names in
                            defer { names += batch.compactMap(Self.name) }
                            return names.isEmpty
                        }
                        // The consumer stops after its first batch until the test lets it go on.
                        if first { for await _ in gate { break } }
                    }
                }
                // The stream's connection stops reading while the consumer waits (a client that
                // read the whole result instead would never stop: given up after a minute).
                guard await Self.paused(flow, within: .seconds(60)) else {
                    Issue.record(
                        "the stream's connection never stopped reading; the client held \(flow.peakHeld) bytes")
                    open.finish()
                    _ = try? await fetch.value
                    return
                }
                #expect(flow.pausedConnections == 1)
                // What waits in the client: above the pause threshold (4 MiB) by at most a read
                // and a response (the daemon's are at most about 1 MiB), far from the 25 MB left.
                #expect(flow.peakHeld > 4 * 1024 * 1024)
                #expect(flow.peakHeld < 7 * 1024 * 1024, "the client held \(flow.peakHeld) bytes")
                // The client's other calls go on beside the stopped stream.
                #expect(try await client.count(FetchDescriptor(entityName: "Blob"), in: "big") == Self.objects)
                let some = try await client.fetch(
                    FetchDescriptor(entityName: "Blob", sortBy: [SortDescriptor("name")], limit: 3), in: "big")
                #expect(some.objects.compactMap(Self.name) == ["b000000", "b000001", "b000002"])
                // Let go, the consumer gets the rest: every object once, in order, and the
                // connection reads again.
                open.yield()
                open.finish()
                #expect(try await fetch.value == Self.objects)
                #expect(names.withLock { $0 } == (0..<Self.objects).map { String(format: "b%06d", $0) })
                #expect(flow.pausedConnections == 0)
                #expect(flow.peakHeld < 7 * 1024 * 1024, "the client held \(flow.peakHeld) bytes")
            }
        }
    }

    /// A consumer that gives up partway ends its stream, whose connection closes: the daemon
    /// frees the stream's slot. With two slots, ten such fetches one after another would
    /// otherwise leave the third waiting for a slot until the stall timeout refused it.
    @Test func aConsumerThatStopsEarlyFreesItsStream() async throws {
        try await TestDaemon.withDaemon(configure: {
            $0.maximumMessageSize = 8 * 1024 * 1024
            $0.maximumStreamingFetches = 2
            $0.streamStallTimeout = .seconds(5)
        }) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .framed) { client in
                try await Self.makeStore(client)
                struct Enough: Error {}
                for _ in 0..<10 {
                    let taken = Mutex(0)
                    await #expect(throws: Enough.self) {
                        try await client.fetch(FetchDescriptor(entityName: "Blob"), in: "big", batchSize: 100) {
                            batch in
                            let total = taken.withLock { taken in
                                taken += batch.count
                                return taken
                            }
                            if total >= 300 { throw Enough() }
                        }
                    }
                    #expect(taken.withLock { $0 } == 300)
                }
                #expect(try await client.count(FetchDescriptor(entityName: "Blob"), in: "big") == Self.objects)
            }
        }
    }
}
