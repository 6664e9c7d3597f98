import ModelCore

/// Which history transactions to read, as SwiftData's `HistoryDescriptor<DefaultHistoryTransaction>`:
/// a `#Predicate` over the transaction (its `token`, `author`, `timestamp`…), a sort, a limit.
///
///     var descriptor = HistoryDescriptor<DefaultHistoryTransaction>()
///     descriptor.predicate = #Predicate { $0.token > token && $0.author == "widget" }
///     let transactions = try await context.fetchHistory(descriptor)
///
/// The store reads the transactions after ``token`` (and of ``author``, when set); the predicate
/// is evaluated on each of those as it is read, so a descriptor that sets `token` reads less.
public struct HistoryDescriptor<Transaction>: @unchecked Sendable {
    // @unchecked: Foundation.Predicate is Sendable only where its inputs are; DefaultHistoryTransaction is.
    /// Which transactions: nil for all.
    public var predicate: Foundation.Predicate<Transaction>?
    /// Their order (oldest first when empty).
    public var sortBy: [Foundation.SortDescriptor<Transaction>]
    /// At most this many results; nil or 0 for all of them (0 as Core Data's `fetchLimit`).
    @ZeroIsNoLimit public var fetchLimit: Int?
    /// Transactions after this token only, read so by the store (all of them when nil).
    public var token: DefaultHistoryToken?
    /// Only the transactions of this author (a context's ``ModelContext/author``), read so by the store.
    public var author: String?

    public init(
        predicate: Foundation.Predicate<Transaction>? = nil, sortBy: [Foundation.SortDescriptor<Transaction>] = []
    ) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}

extension HistoryDescriptor where Transaction == DefaultHistoryTransaction {
    /// The transactions after `token` (all when nil), of `author` only when given.
    public init(after token: DefaultHistoryToken? = nil, author: String? = nil, fetchLimit: Int? = nil) {
        self.init()
        self.token = token
        self.author = author
        self.fetchLimit = fetchLimit
    }
}

extension ModelContext {
    /// Transactions read from the store at a time while a predicate picks among them.
    static let historyPage = 1_000

    /// The history transactions `descriptor` selects, oldest first unless it sorts: what this
    /// and every other context, process or stack saved to the store.
    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) async throws
        -> [DefaultHistoryTransaction]
    {
        let store = container.store, types = container.types, storeIdentifier = container.storeIdentifier
        // Without a predicate or sort, the store applies the limit itself.
        guard descriptor.predicate != nil || !descriptor.sortBy.isEmpty else {
            return try await store.history(
                after: descriptor.token, author: descriptor.author, limit: descriptor.fetchLimit
            )
            .map { DefaultHistoryTransaction($0, types: types, store: storeIdentifier) }
        }
        var selected: [DefaultHistoryTransaction] = []
        var after = descriptor.token
        // With a sort, the limit applies to the sorted whole; without, the first matches suffice.
        let enough = descriptor.sortBy.isEmpty ? descriptor.fetchLimit : nil
        while true {
            let page = try await store.history(after: after, author: descriptor.author, limit: Self.historyPage)
            for raw in page {
                let transaction = DefaultHistoryTransaction(raw, types: types, store: storeIdentifier)
                if try descriptor.predicate?.evaluate(transaction) ?? true { selected.append(transaction) }
                if let enough, selected.count >= enough { return selected }
            }
            guard page.count == Self.historyPage, let last = page.last else { break }
            after = last.token
        }
        if !descriptor.sortBy.isEmpty {
            selected.sort { lhs, rhs in
                for sort in descriptor.sortBy {
                    switch sort.compare(lhs, rhs) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return false
            }
        }
        if let limit = descriptor.fetchLimit, selected.count > limit { selected.removeLast(selected.count - limit) }
        return selected
    }

    /// Deletes the history transactions `descriptor` selects, as SwiftData's `deleteHistory(_:)`.
    /// History is deleted from its oldest transaction on, so the descriptor must select every
    /// transaction up to its newest one (`#Predicate { $0.token <= token }`); one that leaves
    /// older transactions out is refused with `invalidArgument`, deleting nothing.
    public func deleteHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) async throws {
        let selected = try await fetchHistory(descriptor).map(\.token).sorted()
        guard let newest = selected.last else { return }
        let oldest = try await container.store.history(after: nil, author: nil, limit: selected.count + 1)
            .map(\.token).filter { $0 <= newest }
        guard oldest == selected else {
            let left = Set(oldest).subtracting(selected).sorted().prefix(3).map { String($0.rawValue) }
            throw ModelError(
                .invalidArgument,
                "history is deleted from its oldest transaction on, but the descriptor leaves out transaction(s) \(left.joined(separator: ", ")) before \(newest.rawValue): select every transaction up to a token, as #Predicate { $0.token <= token }"
            )
        }
        try await container.store.deleteHistory(through: newest)
    }

    /// The history transactions after `token` (all of them when nil).
    public func fetchHistory(after token: DefaultHistoryToken?) async throws -> [DefaultHistoryTransaction] {
        try await fetchHistory(HistoryDescriptor(after: token))
    }
}
