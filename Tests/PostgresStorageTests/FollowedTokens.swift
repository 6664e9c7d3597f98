import ModelCore
import ModelFixtures
@testable import PostgresStorage

/// The tokens another opener of a store hears through ``PostgresStore/followChanges``, as a
/// stream: what the tests of notifications across daemons read.
struct FollowedTokens {
    let tokens: AsyncStream<Int64>
    private let follower: Task<Void, Never>
    private let continuation: AsyncStream<Int64>.Continuation

    /// Follows `store`'s changes; `listening` is false when the follower never began to listen
    /// (its stream has then ended).
    static func follow(_ store: PostgresStore) async -> (FollowedTokens, listening: Bool) {
        let (tokens, continuation) = AsyncStream<Int64>.makeStream()
        let listening = TestEvent(), listened = Shared(false)
        let follower = Task {
            try? await store.followChanges(listening: {
                listened.update { $0 = true }
                listening.signal()
            }) { token in
                continuation.yield(token.rawValue)
                return true
            }
            // Ended (or failed before it listened): nobody waits for it any longer.
            listening.signal()
            continuation.finish()
        }
        _ = await listening.wait()
        return (FollowedTokens(tokens: tokens, follower: follower, continuation: continuation), listened.value)
    }

    /// Stops following.
    func stop() {
        follower.cancel()
        continuation.finish()
    }
}
