import Foundation
import ModelCore
import ModelFixtures
import PostgresStorage
import Testing

/// Saves through one opener (one daemon) are heard by another as they commit, through the
/// store's notification channel: every token, in order, promptly.
@Suite struct PostgresChangeTests {
    @Test(.timeLimit(.minutes(1))) func anotherOpenerHearsEverySave() async throws {
        try await PostgresSaveTests.withStore { store in
            let other = try await PostgresStore.open(url: store.endpoint.url)
            let (heard, continuation) = AsyncStream<(token: Int64, at: ContinuousClock.Instant)>.makeStream()
            let listening = TestEvent()
            let failure = Shared<String?>(nil)
            let follower = Task {
                do {
                    try await other.followChanges(listening: { listening.signal() }) { token in
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
                let arrived = try #require(await tokens.next(), "the follower stopped: \(failure.value ?? "-")")
                #expect(arrived.token == saved.token, "tokens arrive once each, in order")
                delays.append(arrived.at - saved.at)
            }
            follower.cancel()
            continuation.finish()
            await other.close()
            let sorted = delays.sorted()
            print(
                "PostgreSQL notification to another opener, from the saver's answer to the follower's hearing (negative: heard first), 20 saves: median \(sorted[10]), max \(sorted[19])"
            )
        }
    }
}
