import Foundation
import ModelCore
import ModelEngine
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
        var ended: [String: String] = [:]
        var endedOrder: [String] = []

        mutating func remember(_ id: String, _ reason: String) {
            if ended.updateValue(reason, forKey: id) == nil { endedOrder.append(id) }
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

    /// The error for a call on a session that has ended.
    static func ended(_ id: String, reason: String) -> ModelError {
        ModelError(.notFound, "session \(id) \(reason); open a new session", context: ["session": id])
    }

    /// Opens a session on `store`; `resourceExhausted` when the daemon has as many as it allows.
    func open(on store: StoreHandle, author: String?, mergePolicy: MergePolicy, uniquenessPolicy: UniquenessPolicy)
        throws(ModelError) -> Session
    {
        let context = store.container.makeContext(
            author: author, mergePolicy: mergePolicy, uniquenessPolicy: uniquenessPolicy)
        let session = Session(id: UUID().uuidString.lowercased(), store: store, context: context, now: now)
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
            if let reason = state.ended[id] { throw Self.ended(id, reason: reason) }
            throw ModelError(.notFound, "no session \(id); open one first", context: ["session": id])
        }
    }

    /// Ends session `id`; returns how many objects had unsaved changes, or nil if it was not open.
    func end(_ id: String, reason: String) async -> Int? {
        guard
            let session = state.withLock({ state -> Session? in
                guard let session = state.sessions.removeValue(forKey: id) else { return nil }
                state.remember(id, reason)
                return session
            })
        else { return nil }
        return await session.end(reason: reason)
    }

    /// Ends the sessions that match `predicate`; returns how many.
    @discardableResult
    func end(where predicate: (Session) -> Bool, reason: String) async -> Int {
        let chosen = state.withLock { state in
            let chosen = state.sessions.values.filter(predicate)
            for session in chosen {
                state.sessions[session.id] = nil
                state.remember(session.id, reason)
            }
            return chosen
        }
        for session in chosen { _ = await session.end(reason: reason) }
        return chosen.count
    }

    /// Ends the sessions idle for longer than the timeout; returns how many.
    @discardableResult
    func endIdle() async -> Int {
        let timeout = idleTimeout, now = now()
        return await end(
            where: { $0.isIdle(longerThan: timeout, at: now) },
            reason: "expired after \(Self.describe(timeout)) without a call")
    }

    var count: Int { state.withLock { $0.sessions.count } }

    func count(on store: String) -> Int {
        state.withLock { $0.sessions.values.filter { $0.store.name == store }.count }
    }

    static func describe(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : String(format: "%.1f s", seconds)
    }
}
