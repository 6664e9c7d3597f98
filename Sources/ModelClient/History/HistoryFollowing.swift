import ModelCore

/// The store's history as it is written, as an `AsyncSequence`: each transaction after a token,
/// oldest first, then each one saved from now on — by any context, process or daemon client —
/// as it is saved (``ModelContext/followHistory(after:author:)``). Unlike an observation it skips
/// nothing: a consumer slower than the saves reads them all, and while it is behind the store
/// sends no more than a few hundred ahead. Iterating starts it; it ends when the task iterating
/// is cancelled or the iterator is dropped, or with the error that stopped it.
public struct HistoryTransactions: AsyncSequence {
    public typealias Element = DefaultHistoryTransaction
    public typealias Failure = any Error

    let store: any StoreConnection
    let types: ModelTypes
    let storeIdentifier: UUID
    let token: DefaultHistoryToken?
    let author: String?

    public func makeAsyncIterator() -> Iterator {
        // Every transaction kept, at most 256 read ahead of the consumer.
        Iterator(
            feed: StoreFeed(.all(ahead: 256)) { [store, token, author] body in
                try await store.followHistory(after: token, author: author, body)
            },
            types: types, store: storeIdentifier)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let feed: StoreFeed<HistoryTransaction>
        let types: ModelTypes
        let store: UUID

        public mutating func next() async throws -> DefaultHistoryTransaction? {
            try await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error)
            -> DefaultHistoryTransaction?
        {
            guard let transaction = try await feed.next(isolation: actor) else { return nil }
            return DefaultHistoryTransaction(transaction, types: types, store: store)
        }
    }
}

extension ModelContext {
    /// Follows the store's history: the transactions after `token` (all when nil; of `author`
    /// only, when given), then each transaction saved from now on, as it is saved — by this or
    /// any other context, process or daemon client. On the daemon new saves arrive at once; on
    /// an embedded file, at once from this container and within 100 ms from other processes.
    ///
    ///     for try await transaction in context.followHistory(after: token) { … }
    public func followHistory(after token: DefaultHistoryToken?, author: String? = nil) -> HistoryTransactions {
        HistoryTransactions(
            store: container.store, types: container.types, storeIdentifier: container.storeIdentifier, token: token,
            author: author)
    }
}
