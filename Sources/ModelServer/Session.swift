import Foundation
import ModelCore
import ModelEngine
import ModelStorage
import Synchronization

/// One client's unit of work on a store: a ModelEngine context (an actor, which runs the
/// session's operations one at a time, in order), its author, and when it was last used. A
/// migration session's context works inside its staged migration, and is replaced by one of
/// the new schema at each step.
final class Session: Sendable {
    let id: String
    let store: StoreHandle
    /// The staged migration a migration session holds (BeginMigration); nil for other sessions.
    let migration: (any StagedMigration)?
    /// How long the session may stay idle; nil for the registry's timeout.
    let idleTimeout: Duration?
    /// The user who opened it (the caller's uid): only it, or an administrator, may use it.
    let owner: UInt32

    private struct State {
        var context: ModelContext
        var lastActivity: ContinuousClock.Instant
        var inFlight = 0
        var ending: SessionEnding?
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> ContinuousClock.Instant

    init(
        id: String, store: StoreHandle, context: ModelContext, migration: (any StagedMigration)? = nil,
        idleTimeout: Duration? = nil, now: @escaping @Sendable () -> ContinuousClock.Instant
    ) {
        self.id = id
        self.store = store
        self.owner = Caller.current.uid
        self.migration = migration
        self.idleTimeout = idleTimeout
        self.now = now
        self.state = Mutex(State(context: context, lastActivity: now()))
    }

    /// The session's context (a migration session's, of its current stage).
    var context: ModelContext { state.withLock { $0.context } }

    /// Gives a migration session the context of its next stage.
    func replaceContext(_ context: ModelContext) {
        state.withLock { $0.context = context }
    }

    /// Runs one call of the session's client. A session that has ended refuses it.
    func run<T>(_ body: (ModelContext) async throws -> T) async throws -> T {
        let context = try state.withLock { state throws(ModelError) -> ModelContext in
            if let ending = state.ending { throw SessionRegistry.ended(id, ending) }
            state.inFlight += 1
            return state.context
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
        let timeout = idleTimeout ?? timeout
        return state.withLock { $0.inFlight == 0 && $0.ending == nil && now - $0.lastActivity > timeout }
    }

    /// Ends the session: later calls are refused as `ending` says; what it did not save is
    /// discarded (after any call under way). A migration session's migration is rolled back
    /// unless it committed, and the store is free again. Returns how many objects had unsaved
    /// changes.
    func end(_ ending: SessionEnding) async -> Int {
        state.withLock { $0.ending = $0.ending ?? ending }
        let discarded = await context.rollback()
        if let migration {
            await migration.rollback()
            store.endMigration(by: id)
        }
        return discarded
    }
}
