import ModelCore
import ModelStorage

extension MemoryStore {
    /// History transactions after `token` (from the start when nil), oldest first, at most `limit`.
    public func history(after token: HistoryToken?, limit: Int?) throws -> [HistoryTransaction] {
        try checkOpen()
        if let limit, limit < 0 { throw ModelError(.invalidArgument, "limit \(limit) is negative") }
        let after = token?.rawValue ?? 0
        let transactions = state.history.lazy.filter { $0.token.rawValue > after }
        return Array(limit.map { Array(transactions.prefix($0)) } ?? Array(transactions))
    }

    /// The token of the latest transaction, or nil if nothing was ever saved.
    public func currentHistoryToken() throws -> HistoryToken? {
        try checkOpen()
        return state.lastToken > 0 ? HistoryToken(state.lastToken) : nil
    }

    /// Deletes the history transactions before `token`.
    public func deleteHistory(before token: HistoryToken) throws {
        try checkWritable()
        state.history.removeAll { $0.token < token }
    }
}

extension MemoryStore {
    /// A fetch and the history token, in one turn of the actor.
    public func fetchWithToken(_ descriptor: FetchDescriptor) throws -> (FetchResult, HistoryToken?) {
        (try fetch(descriptor, overlay: nil), try currentHistoryToken())
    }

    /// Grouped aggregates and the history token, in one turn of the actor.
    public func aggregateWithToken(_ descriptor: AggregateDescriptor) throws -> ([AggregateRow], HistoryToken?) {
        (try aggregate(descriptor, overlay: nil), try currentHistoryToken())
    }
}

extension MemoryStore: StorageHistoryExtent {
    public func oldestHistoryToken() throws -> HistoryToken? {
        try checkOpen()
        return state.history.first?.token
    }
}
