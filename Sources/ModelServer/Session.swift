import Foundation
import ModelCore
import ModelEngine
import Synchronization

/// One client's unit of work on a store: a ModelEngine context (an actor, which runs the
/// session's operations one at a time, in order), its author, and when it was last used.
final class Session: Sendable {
    let id: String
    let store: StoreHandle
    let context: ModelContext

    private struct State {
        var lastActivity: ContinuousClock.Instant
        var inFlight = 0
        var ending: SessionEnding?
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> ContinuousClock.Instant

    init(id: String, store: StoreHandle, context: ModelContext, now: @escaping @Sendable () -> ContinuousClock.Instant)
    {
        self.id = id
        self.store = store
        self.context = context
        self.now = now
        self.state = Mutex(State(lastActivity: now()))
    }

    /// Runs one call of the session's client. A session that has ended refuses it.
    func run<T>(_ body: (ModelContext) async throws -> T) async throws -> T {
        try state.withLock { state throws(ModelError) in
            if let ending = state.ending { throw SessionRegistry.ended(id, ending) }
            state.inFlight += 1
        }
        defer {
            let finished = now()
            state.withLock { state in
                state.inFlight -= 1
                state.lastActivity = finished
            }
        }
        return try await body(context)
    }

    /// Whether no call is running and none came for longer than `timeout`.
    func isIdle(longerThan timeout: Duration, at now: ContinuousClock.Instant) -> Bool {
        state.withLock { $0.inFlight == 0 && $0.ending == nil && now - $0.lastActivity > timeout }
    }

    /// Ends the session: later calls are refused as `ending` says; what it did not save is
    /// discarded (after any call under way). Returns how many objects had unsaved changes.
    func end(_ ending: SessionEnding) async -> Int {
        state.withLock { $0.ending = $0.ending ?? ending }
        return await context.rollback()
    }
}
