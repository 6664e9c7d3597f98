import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import PostgresStorage
import Testing

/// Saves through one opener (one daemon) are heard by another as they commit, through the
/// store's notification channel: every token, in order, promptly.
@Suite struct PostgresChangeTests {
    // The limit guards against a hang: under the whole suite, a save on the shared test cluster can take a second.
    @Test(.timeLimit(.minutes(3))) func anotherOpenerHearsEverySave() async throws {
        // What the test was doing and when (seconds from its start), so a failure under load says where time went.
        let started = ContinuousClock.now
        let progress = Shared<[String]>([])
        @Sendable func step(_ what: String) {
            let elapsed = ContinuousClock.now - started
            progress.update {
                $0.append("\(elapsed.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 2)))) \(what)")
            }
        }
        step("opening the store")
        try await PostgresSaveTests.withStore { store in
            step("opening another")
            let other = try await PostgresStore.open(url: store.endpoint.url)
            let (heard, continuation) = AsyncStream<(token: Int64, at: ContinuousClock.Instant)>.makeStream()
            let listening = TestEvent()
            let failure = Shared<String?>(nil)
            let follower = Task {
                do {
                    try await other.followChanges(listening: { listening.signal() }) { token in
                        step("heard \(token.rawValue)")
                        continuation.yield((token.rawValue, .now))
                        return true
                    }
                } catch {
                    // Ends the stream, so the test fails saying why rather than waiting out its limit.
                    failure.update { $0 = "\(error)" }
                    listening.signal()
                    continuation.finish()
                }
            }
            #expect(await listening.wait(), "the follower never listened")
            step("listening")
            var tokens = heard.makeAsyncIterator()
            func save(_ name: String) async throws -> (token: Int64, at: ContinuousClock.Instant) {
                let result = try await store.save(
                    ChangeSet(inserts: [
                        InsertedObject(
                            id: PostgresSaveTests.temporary(store, "Trip"),
                            attributes: PostgresSaveTests.trip(name, "2026-04-01"))
                    ]))
                return (result.token?.rawValue ?? 0, .now)
            }
            var delays: [Duration] = []
            for index in 0..<20 {
                let saved = try await save("trip \(index)")
                step("saved \(saved.token)")
                let arrived = try #require(
                    await tokens.next(),
                    "the follower stopped: \(failure.value ?? "-"); \(progress.value.suffix(12).joined(separator: ", "))"
                )
                #expect(arrived.token == saved.token, "tokens arrive once each, in order")
                delays.append(arrived.at - saved.at)
            }
            follower.cancel()
            continuation.finish()
            await other.close()
            let sorted = delays.sorted()
            print("PostgresChangeTests steps: \(progress.value.joined(separator: ", "))")
            print(
                "PostgreSQL notification to another opener, from the saver's answer to the follower's hearing (negative: heard first), 20 saves: median \(sorted[10]), max \(sorted[19])"
            )
        }
    }

    /// A namespace of any length the URL check takes (up to 63 characters) names a channel
    /// `pg_notify` takes: saves to the store work and another opener hears them. Names that fit
    /// `modeld.<namespace>` keep that channel, as stores made before longer names worked.
    @Test(.timeLimit(.minutes(2))) func aStoreOfTheLongestNamespaceSavesAndIsHeard() async throws {
        #expect(PostgresMetadata.channel(of: "trips") == "modeld.trips")
        let fits = String(repeating: "f", count: 56)
        #expect(PostgresMetadata.channel(of: fits) == "modeld." + fits)
        let a = "l" + String(repeating: "x", count: 61) + "a", b = "l" + String(repeating: "x", count: 61) + "b"
        for long in [a, b, String(repeating: "g", count: 57)] {
            let channel = PostgresMetadata.channel(of: long)
            #expect(channel.utf8.count <= 63 && channel.hasPrefix("modeld." + long.prefix(39) + "."), "\(channel)")
            #expect(PostgresMetadata.channel(of: long) == channel, "the same in every daemon")
        }
        #expect(PostgresMetadata.channel(of: a) != PostgresMetadata.channel(of: b))

        let namespace = "t_" + (UUID().uuidString + UUID().uuidString).lowercased().filter { $0 != "-" }.prefix(61)
        #expect(namespace.count == 63)
        let url = try PostgresServer.url() + "&schema=\(namespace)"
        let store = try await PostgresStore.open(url: url, applying: SampleTrips.schema)
        let other = try await PostgresStore.open(url: url)
        let (followed, listening) = await FollowedTokens.follow(other)
        #expect(listening, "the follower never listened")
        let saved = try await store.save(
            ChangeSet(inserts: [
                InsertedObject(
                    id: PostgresSaveTests.temporary(store, "Trip"),
                    attributes: PostgresSaveTests.trip("Kyoto", "2026-04-01"))
            ]))
        var tokens = followed.tokens.makeAsyncIterator()
        #expect(await tokens.next() == saved.token?.rawValue)
        #expect(try await other.fetch(FetchDescriptor(entityName: "Trip")).objects.count == 1)
        followed.stop()
        await other.close()
        await store.close()
        try await PostgresStorageFactory().destroy(try StoreLocation(url: url))
    }
}
