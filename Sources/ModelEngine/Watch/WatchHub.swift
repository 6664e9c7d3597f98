import Foundation
import ModelCore
import ModelStorage
import Synchronization

/// The watches of one store, and the one task that tells them of saves: it reads each new
/// history transaction once (woken by ``HistorySignal`` on this process's saves, and by a poll
/// for other processes'), and wakes only the watches whose entities the transaction touched. A
/// woken watch is marked with the newest token, however many saves woke it: what a watch waits
/// on is one token, never a queue.
public final class WatchHub: Sendable {
    /// How often the hub looks for saves made by other processes on the same store.
    public static let defaultPollInterval = Duration.milliseconds(100)
    /// History transactions read at a time.
    static let pageSize = 256

    let signal: HistorySignal
    let pollInterval: Duration
    private let history: @Sendable (HistoryToken?, Int) async throws -> [HistoryTransaction]
    private let state = Mutex(State())

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        /// The subscribers of each entity: a transaction wakes those of the entities it touched,
        /// at a cost that does not grow with the watches it does not touch.
        var byEntity: [String: Set<UInt64>] = [:]
        var nextID: UInt64 = 0
        var task: Task<Void, Never>?
        /// Every transaction up to this one has been told to the subscribers.
        var lastToken: HistoryToken?
        /// Why the hub's store is gone, once it is.
        var ended: ModelError?
    }

    private struct Subscriber {
        let entities: Set<String>
        let mailbox: WatchMailbox
    }

    /// A hub reading its store's history with `history` (transactions after a token, at most a
    /// number of them), woken by `signal`.
    public init(
        signal: HistorySignal, pollInterval: Duration = defaultPollInterval,
        history: @escaping @Sendable (HistoryToken?, Int) async throws -> [HistoryTransaction]
    ) {
        self.signal = signal
        self.pollInterval = pollInterval
        self.history = history
    }

    /// A hub for `backend`'s store, reading its history.
    public convenience init(signal: HistorySignal, backend: any StorageBackend) {
        self.init(signal: signal) { after, limit in try await backend.history(after: after, limit: limit) }
    }

    /// Watches open on the store.
    public var watchCount: Int { state.withLock { $0.subscribers.count } }

    /// Subscribes a watch of `entities` whose result is true at `token`: its mailbox gets every
    /// later transaction that touches them.
    func subscribe(entities: Set<String>, after token: HistoryToken?) throws(ModelError) -> WatchSubscription {
        let mailbox = WatchMailbox()
        let id = try state.withLock { state throws(ModelError) -> UInt64 in
            if let ended = state.ended { throw ended }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(entities: entities, mailbox: mailbox)
            for entity in entities { state.byEntity[entity, default: []].insert(id) }
            if state.task == nil {
                state.lastToken = token
                state.task = Task { [weak self] in await self?.run() }
            } else if let told = state.lastToken, told > token ?? HistoryToken(0) {
                // Transactions after the watch's result were told before it subscribed.
                mailbox.post(told)
            }
            return id
        }
        return WatchSubscription(hub: self, id: id, mailbox: mailbox)
    }

    func unsubscribe(_ id: UInt64) {
        state.withLock { state in
            guard let subscriber = state.subscribers.removeValue(forKey: id) else { return }
            for entity in subscriber.entities {
                state.byEntity[entity]?.remove(id)
                if state.byEntity[entity]?.isEmpty == true { state.byEntity[entity] = nil }
            }
            if state.subscribers.isEmpty {
                state.task?.cancel()
                state.task = nil
                state.lastToken = nil
            }
        }
    }

    /// Ends every watch with `error` (the store's schema changed), leaving the hub open for new ones.
    public func endWatches(with error: ModelError) {
        let ended = state.withLock { state in
            defer {
                state.subscribers = [:]
                state.byEntity = [:]
                state.task?.cancel()
                state.task = nil
                state.lastToken = nil
            }
            return Array(state.subscribers.values)
        }
        for subscriber in ended { subscriber.mailbox.end(error) }
    }

    /// Ends every watch with `error`, and refuses new ones with it: the store is gone.
    public func close(with error: ModelError) {
        state.withLock { $0.ended = error }
        endWatches(with: error)
    }

    /// Reads new transactions and tells them, until cancelled.
    private func run() async {
        while !Task.isCancelled {
            let generation = signal.generation
            let after = state.withLock { $0.lastToken }
            do {
                let page = try await history(after, Self.pageSize)
                if tell(page, after: after), page.count == Self.pageSize { continue }
            } catch let error as ModelError where error.code == .closed {
                close(with: ModelError(.notFound, "the store was closed: \(error.message)"))
                return
            } catch {
                // The store's server cannot be reached: the next poll tries again.
            }
            await signal.waitForChange(after: generation, orFor: pollInterval)
        }
    }

    /// Tells each subscriber of the transactions that touch its entities; false when the hub
    /// moved on meanwhile (a subscriber came first, or all left).
    private func tell(_ page: [HistoryTransaction], after: HistoryToken?) -> Bool {
        var schemaChange: SchemaVersionChange?
        let told = state.withLock { state -> Bool in
            guard state.lastToken == after, state.task != nil else { return false }
            var expected = (after?.rawValue ?? 0) + 1
            for transaction in page {
                if let change = transaction.schemaChange {
                    schemaChange = change
                    return true
                }
                // A gap: history was deleted, so what changed is not known; every watch looks again.
                if transaction.token.rawValue != expected {
                    for subscriber in state.subscribers.values { subscriber.mailbox.post(transaction.token) }
                } else {
                    var touched = Set<String>()
                    for change in transaction.changes where touched.insert(change.id.entityName).inserted {
                        for id in state.byEntity[change.id.entityName] ?? [] {
                            state.subscribers[id]?.mailbox.post(transaction.token)
                        }
                    }
                }
                expected = transaction.token.rawValue + 1
                state.lastToken = transaction.token
            }
            return true
        }
        if let schemaChange {
            endWatches(
                with: ModelError(
                    .schemaMismatch,
                    "the store's schema changed (version \(schemaChange.from.prefix(12)) to \(schemaChange.to.prefix(12))): open the watch again"
                ))
        }
        return told
    }

}

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
