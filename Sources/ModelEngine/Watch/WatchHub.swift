import Foundation
import ModelCore
import ModelStorage
import Synchronization

/// The watches of one store, and what tells them of saves. A save made through this process
/// is told with the entities it touched (``saved(_:touching:)``), at no cost to the watches it
/// does not touch and with no read of history; saves made elsewhere (another process on the
/// same file, another daemon on the same PostgreSQL store) are read from history, on a poll and
/// when a change feed hears them (``heard(_:)``). A woken watch is marked with the newest token,
/// however many saves woke it: what a watch waits on is one token, never a queue.
public final class WatchHub: Sendable {
    /// How often the hub looks for saves made by other processes on the same store.
    public static let defaultPollInterval = Duration.milliseconds(100)
    /// History transactions read at a time.
    static let pageSize = 256
    /// Saves told ahead of one not yet told, kept until it is (beyond this, history is read).
    static let pendingLimit = 256

    let pollInterval: Duration
    private let history: @Sendable (HistoryToken?, Int) async throws -> [HistoryTransaction]
    /// Where the store's history is now, and whether its schema changed: asked when history
    /// that was not read was deleted (``HistoryGap``).
    private let store: HistoryGap.Store?
    private let state = Mutex(State())

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        /// The subscribers of each entity: a transaction wakes those of the entities it touched,
        /// at a cost that does not grow with the watches it does not touch.
        var byEntity: [String: Set<UInt64>] = [:]
        var nextID: UInt64 = 0
        /// Grows each time the last watch leaves: a reader of an earlier epoch tells nothing.
        var epoch: UInt64 = 0
        /// Asks for a read of history every poll interval while watches are open.
        var poller: Task<Void, Never>?
        /// Reads history until it has told all of it, then ends.
        var reader: Task<Void, Never>?
        /// A read was asked for while one ran: it reads again.
        var readAgain = false
        /// Every transaction up to this one has been told to the subscribers.
        var lastToken: HistoryToken?
        /// Saves of this process told before an earlier transaction was: their entities, by token.
        var pending: [HistoryToken: Set<String>] = [:]
        /// Why the hub's store is gone, once it is.
        var ended: ModelError?
        /// Pages of history read so far.
        var historyReads = 0

        var isOpen: Bool { poller != nil }

        /// Tells the transaction `token`, which touched `entities`, to their subscribers.
        mutating func tell(_ token: HistoryToken, touching entities: some Sequence<String>) {
            var touched = Set<String>()
            for entity in entities where touched.insert(entity).inserted {
                for id in byEntity[entity] ?? [] { subscribers[id]?.mailbox.post(token) }
            }
            lastToken = token
        }

        /// Tells every watch of `token`, after a gap (history deleted before it was read): what
        /// changed is not known, so every watch looks again.
        mutating func tellEveryWatch(_ token: HistoryToken) {
            for subscriber in subscribers.values { subscriber.mailbox.post(token) }
            lastToken = token
        }

        /// Tells the pending saves that now follow on from the last token told.
        mutating func tellPending() {
            guard !pending.isEmpty else { return }
            while let next = lastToken.map({ HistoryToken($0.rawValue + 1) }),
                let entities = pending.removeValue(forKey: next)
            {
                tell(next, touching: entities)
            }
            let told = lastToken ?? HistoryToken(0)
            pending = pending.filter { $0.key > told }
        }

        /// Leaves the hub idle: no task, nothing told, nothing pending.
        mutating func stop() {
            poller?.cancel()
            reader?.cancel()
            poller = nil
            reader = nil
            readAgain = false
            lastToken = nil
            pending = [:]
            epoch &+= 1
        }
    }

    private struct Subscriber {
        let entities: Set<String>
        let mailbox: WatchMailbox
    }

    /// A hub reading its store's history with `history` (transactions after a token, at most a
    /// number of them) for saves it is not told of.
    public init(
        pollInterval: Duration = defaultPollInterval, store: HistoryGap.Store? = nil,
        history: @escaping @Sendable (HistoryToken?, Int) async throws -> [HistoryTransaction]
    ) {
        self.pollInterval = pollInterval
        self.store = store
        self.history = history
    }

    /// A hub for `backend`'s store, reading its history.
    public convenience init(backend: any StorageBackend) {
        self.init(store: HistoryGap.Store(backend)) { after, limit in
            try await backend.history(after: after, limit: limit)
        }
    }

    /// Watches open on the store.
    public var watchCount: Int { state.withLock { $0.subscribers.count } }

    /// Pages of history the hub has read (saves it was told of need none).
    public var historyReadCount: Int { state.withLock { $0.historyReads } }

    /// Subscribes a watch of `entities` whose result is true at `token`: its mailbox gets every
    /// later transaction that touches them.
    func subscribe(entities: Set<String>, after token: HistoryToken?) throws(ModelError) -> WatchSubscription {
        let mailbox = WatchMailbox()
        var opened = false
        let id = try state.withLock { state throws(ModelError) -> UInt64 in
            if let ended = state.ended { throw ended }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(entities: entities, mailbox: mailbox)
            for entity in entities { state.byEntity[entity, default: []].insert(id) }
            if !state.isOpen {
                state.lastToken = token
                opened = true
                let interval = pollInterval
                state.poller = Task { [weak self] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        self?.readHistory()
                    }
                }
            } else if let told = state.lastToken, told > token ?? HistoryToken(0) {
                // Transactions after the watch's result were told before it subscribed.
                mailbox.post(told)
            }
            return id
        }
        // Saves between the watch's read and now were told to no one: history says.
        if opened { readHistory() }
        return WatchSubscription(hub: self, id: id, mailbox: mailbox)
    }

    func unsubscribe(_ id: UInt64) {
        state.withLock { state in
            guard let subscriber = state.subscribers.removeValue(forKey: id) else { return }
            for entity in subscriber.entities {
                state.byEntity[entity]?.remove(id)
                if state.byEntity[entity]?.isEmpty == true { state.byEntity[entity] = nil }
            }
            if state.subscribers.isEmpty { state.stop() }
        }
    }

    /// Tells the watches of a save made through this process: its token, and the entities of
    /// the objects its history transaction records (``SaveResult/touchedEntities``). Saves told
    /// out of order wait for the ones before them; one after a save this process did not make is
    /// told once history is read.
    public func saved(_ token: HistoryToken?, touching entities: Set<String>) {
        guard let token else { return }
        let mustRead = state.withLock { state -> Bool in
            guard state.isOpen, token > state.lastToken ?? HistoryToken(0) else { return false }
            // Entities not known: history says.
            if entities.isEmpty { return true }
            if token.rawValue == (state.lastToken?.rawValue ?? 0) + 1 {
                state.tell(token, touching: entities)
                state.tellPending()
                return false
            }
            if state.pending.count < Self.pendingLimit { state.pending[token] = entities }
            return true
        }
        if mustRead { readHistory() }
    }

    /// Tells the watches that the store's history reached `token`, through any process (a change
    /// feed heard it): history is read unless it was told already.
    public func heard(_ token: HistoryToken) {
        let mustRead = state.withLock { $0.isOpen && token > $0.lastToken ?? HistoryToken(0) }
        if mustRead { readHistory() }
    }

    /// Ends every watch with `error` (the store's schema changed), leaving the hub open for new ones.
    public func endWatches(with error: ModelError) {
        let ended = state.withLock { state in
            defer {
                state.subscribers = [:]
                state.byEntity = [:]
                state.stop()
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

    /// Starts a read of history, or asks the running one to read again.
    private func readHistory() {
        state.withLock { state in
            guard state.isOpen else { return }
            guard state.reader == nil else {
                state.readAgain = true
                return
            }
            let epoch = state.epoch
            state.reader = Task { [weak self] in await self?.read(epoch: epoch) }
        }
    }

    /// Reads new transactions and tells them, until it has told all of history.
    private func read(epoch: UInt64) async {
        while !Task.isCancelled {
            let after = state.withLock { state -> HistoryToken?? in
                guard state.epoch == epoch else { return .none }
                state.readAgain = false
                return .some(state.lastToken)
            }
            guard case .some(let after) = after else { return }
            do {
                var page: [HistoryTransaction] = []
                var gap: HistoryToken?
                if let store {
                    // The store's token first: an idle poll reads no history, and history missing
                    // below the token (read before it) was deleted, not yet to come.
                    let current = try await store.currentToken()
                    if current ?? HistoryToken(0) > after ?? HistoryToken(0) {
                        page = try await readPage(after: after)
                        gap = HistoryGap.find(after: after, page: page, current: current)
                    }
                } else {
                    page = try await readPage(after: after)
                }
                if let gap, let store {
                    if let changed = try await store.schemaChange() {
                        // Unless the hub went idle meanwhile: its next watches are of the new schema.
                        if state.withLock({ $0.epoch == epoch }) {
                            endWatches(with: Self.schemaChanged(changed.from, changed.to))
                        }
                        return
                    }
                    if page.isEmpty { tellEveryWatch(gap, epoch: epoch) }
                }
                if tell(page, epoch: epoch), page.count == Self.pageSize { continue }
            } catch let error as ModelError where error.code == .closed || error.code == .notFound {
                // Closed here, or gone from its server (dropped by another daemon sharing it).
                close(
                    with: ModelError(
                        .notFound, "the store was \(error.code == .closed ? "closed" : "dropped"): \(error.message)"))
                return
            } catch {
                // The store's server cannot be reached: the next poll tries again.
            }
            let done = state.withLock { state -> Bool in
                guard state.epoch == epoch else { return true }
                if state.readAgain { return false }
                state.reader = nil
                return true
            }
            if done { return }
        }
    }

    /// A page of history after `after`, counted.
    private func readPage(after: HistoryToken?) async throws -> [HistoryTransaction] {
        state.withLock { $0.historyReads += 1 }
        return try await history(after, Self.pageSize)
    }

    /// Tells each subscriber of the transactions that touch its entities, skipping those told
    /// already; false when the hub went idle meanwhile.
    private func tell(_ page: [HistoryTransaction], epoch: UInt64) -> Bool {
        var schemaChange: SchemaVersionChange?
        let told = state.withLock { state -> Bool in
            guard state.epoch == epoch else { return false }
            for transaction in page where transaction.token > state.lastToken ?? HistoryToken(0) {
                if let change = transaction.schemaChange {
                    schemaChange = change
                    return true
                }
                if transaction.token.rawValue == (state.lastToken?.rawValue ?? 0) + 1 {
                    state.tell(transaction.token, touching: transaction.changes.lazy.map(\.id.entityName))
                } else {
                    state.tellEveryWatch(transaction.token)
                }
            }
            state.tellPending()
            return true
        }
        if let schemaChange { endWatches(with: Self.schemaChanged(schemaChange.from, schemaChange.to)) }
        return told
    }

    /// Why watches end when the store's schema changes.
    private static func schemaChanged(_ from: String, _ to: String) -> ModelError {
        ModelError(
            .schemaMismatch,
            "the store's schema changed (version \(from.prefix(12)) to \(to.prefix(12))): open the watch again")
    }

    /// Wakes every watch for `token`, the newest of transactions whose history was deleted
    /// before it was read, unless the hub went idle meanwhile or was told of it already.
    private func tellEveryWatch(_ token: HistoryToken, epoch: UInt64) {
        state.withLock { state in
            guard state.epoch == epoch, token > state.lastToken ?? HistoryToken(0) else { return }
            state.tellEveryWatch(token)
            state.tellPending()
        }
    }
}
