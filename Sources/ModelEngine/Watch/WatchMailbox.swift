import ModelCore
import Synchronization

/// A watch's place in a hub: unsubscribed when released.
final class WatchSubscription: Sendable {
    let mailbox: WatchMailbox
    private let hub: WatchHub
    private let id: UInt64

    init(hub: WatchHub, id: UInt64, mailbox: WatchMailbox) {
        self.hub = hub
        self.id = id
        self.mailbox = mailbox
    }

    deinit { hub.unsubscribe(id) }
}

/// What a hub tells one watch: the newest token of a transaction that touched its entities, or
/// why it ended. Holds one token, however many saves there were.
final class WatchMailbox: Sendable {
    private struct State {
        var latest: HistoryToken?
        var ended: ModelError?
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func post(_ token: HistoryToken) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard token > state.latest ?? HistoryToken(0) else { return nil }
            state.latest = token
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func end(_ error: ModelError) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.ended == nil { state.ended = error }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits for a token after `token`, and returns it; throws why the watch ended, or
    /// `CancellationError`.
    func wait(after token: HistoryToken?) async throws -> HistoryToken {
        try Task.checkCancellation()
        var found = try ready(after: token)
        while found == nil {
            await suspend(after: token)
            try Task.checkCancellation()
            found = try ready(after: token)
        }
        return found ?? HistoryToken(0) // not nil: the loop ended
    }

    /// The newest token if it is after `token`; throws why the watch ended.
    private func ready(after token: HistoryToken?) throws -> HistoryToken? {
        let (ended, latest) = state.withLock { ($0.ended, $0.latest) }
        if let ended { throw ended }
        if let latest, latest > token ?? HistoryToken(0) { return latest }
        return nil
    }

    /// Returns once a token after `token` is posted, the watch ends, or the task is cancelled.
    private func suspend(after token: HistoryToken?) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    let ready = state.ended != nil || (state.latest.map { $0 > token ?? HistoryToken(0) } ?? false)
                    if ready || Task.isCancelled { return true }
                    state.waiter = waiter
                    return false
                }
                if resumeNow { waiter.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
