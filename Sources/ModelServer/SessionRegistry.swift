import Foundation
import ModelCore
import ModelEngine
import ModelStorage
import Synchronization

/// The open sessions, by their IDs, and why recent ones ended (so that a late call hears that
/// its session expired rather than that it never existed).
final class SessionRegistry: Sendable {
    let maximumSessions: Int
    let idleTimeout: Duration
    /// How many ended sessions are remembered.
    static let endedMemory = 10_000

    private struct State {
        var sessions: [String: Session] = [:]
        var ended: [String: SessionEnding] = [:]
        var endedOrder: [String] = []

        mutating func remember(_ id: String, _ ending: SessionEnding) {
            if ended.updateValue(ending, forKey: id) == nil { endedOrder.append(id) }
            if endedOrder.count > SessionRegistry.endedMemory {
                let forget = endedOrder.prefix(endedOrder.count - SessionRegistry.endedMemory)
                for old in forget { ended[old] = nil }
                endedOrder.removeFirst(forget.count)
            }
        }
    }

    private let state = Mutex(State())
    /// The clock sessions are timed by (a test's own, to judge idleness without waiting).
    let now: @Sendable () -> ContinuousClock.Instant

    init(maximumSessions: Int, idleTimeout: Duration, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now })
    {
        self.maximumSessions = maximumSessions
        self.idleTimeout = idleTimeout
        self.now = now
    }

    /// The error for a call on a session that has ended: `notFound`, or the ending's own code
    /// (`failedPrecondition`-like `schemaMismatch` when its store migrated).
    static func ended(_ id: String, _ ending: SessionEnding) -> ModelError {
        ModelError(ending.code, "session \(id) \(ending.reason); open a new session", context: ["session": id])
    }

    /// Opens a session on `store`; `resourceExhausted` when the daemon has as many as it allows.
    func open(on store: StoreHandle, author: String?, mergePolicy: MergePolicy, uniquenessPolicy: UniquenessPolicy)
        throws(ModelError) -> Session
    {
        let context = store.container.makeContext(
            author: author, mergePolicy: mergePolicy, uniquenessPolicy: uniquenessPolicy)
        return try add(Session(id: UUID().uuidString.lowercased(), store: store, context: context, now: now))
    }

    /// Opens a migration session on `store`, holding `migration` (whose container `context` is
    /// of), idle for at most `idleTimeout`.
    func openMigration(
        on store: StoreHandle, migration: any StagedMigration, context: ModelContext, idleTimeout: Duration
    ) throws(ModelError) -> Session {
        try add(
            Session(
                id: UUID().uuidString.lowercased(), store: store, context: context, migration: migration,
                idleTimeout: idleTimeout, now: now))
    }

    private func add(_ session: Session) throws(ModelError) -> Session {
        try state.withLock { state throws(ModelError) in
            guard state.sessions.count < maximumSessions else {
                throw ModelError(
                    .resourceExhausted,
                    "the daemon has \(state.sessions.count) open sessions, its limit (--max-sessions); close sessions you no longer need, or wait for idle ones to expire"
                )
            }
            state.sessions[session.id] = session
        }
        return session
    }

    /// The open session `id`; `notFound` saying why when it ended or never existed.
    func session(_ id: String) throws(ModelError) -> Session {
        try state.withLock { state throws(ModelError) in
            if let session = state.sessions[id] { return session }
            if let ending = state.ended[id] { throw Self.ended(id, ending) }
            throw ModelError(.notFound, "no session \(id); open one first", context: ["session": id])
        }
    }

    /// Ends session `id`; returns how many objects had unsaved changes, or nil if it was not open.
    func end(_ id: String, reason: String) async -> Int? {
        let ending = SessionEnding(reason: reason)
        guard
            let session = state.withLock({ state -> Session? in
                guard let session = state.sessions.removeValue(forKey: id) else { return nil }
                state.remember(id, ending)
                return session
            })
        else { return nil }
        return await session.end(ending)
    }

    /// Ends the sessions that match `predicate`; returns how many.
    @discardableResult
    func end(where predicate: (Session) -> Bool, reason: String, code: ModelError.Code = .notFound) async -> Int {
        let ending = SessionEnding(reason: reason, code: code)
        let chosen = state.withLock { state in
            let chosen = state.sessions.values.filter(predicate)
            for session in chosen {
                state.sessions[session.id] = nil
                state.remember(session.id, ending)
            }
            return chosen
        }
        for session in chosen { _ = await session.end(ending) }
        return chosen.count
    }

    /// Ends the sessions idle for longer than their timeout (a migration session's own, which
    /// rolls its migration back); returns how many.
    @discardableResult
    func endIdle() async -> Int {
        let now = now()
        let timeouts = state.withLock { Set($0.sessions.values.compactMap(\.idleTimeout)) }.union([idleTimeout])
        var ended = 0
        for timeout in timeouts {
            ended += await end(
                where: { ($0.idleTimeout ?? self.idleTimeout) == timeout && $0.isIdle(longerThan: timeout, at: now) },
                reason: "expired after \(Self.describe(timeout)) without a call")
        }
        return ended
    }

    var count: Int { state.withLock { $0.sessions.count } }

    func count(on store: String) -> Int {
        count { $0.store.name == store }
    }

    /// How many open sessions `included` takes.
    func count(where included: (Session) -> Bool) -> Int {
        state.withLock { $0.sessions.values.reduce(0) { $0 + (included($1) ? 1 : 0) } }
    }

    static func describe(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : String(format: "%.1f s", seconds)
    }
}

/// Why a session ended, and the code its later calls hear.
struct SessionEnding: Sendable {
    /// What happened, after "session <id> ": `expired after 600 s without a call`.
    let reason: String
    /// `notFound` (closed, expired, dropped), or `schemaMismatch` when its store migrated.
    var code: ModelError.Code = .notFound
}
