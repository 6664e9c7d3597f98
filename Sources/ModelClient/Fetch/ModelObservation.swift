import ModelCore

/// A query kept true, as an `AsyncSequence`: the first element is the query's result now; each
/// later one follows a save — by any context, process or daemon client — that changed the
/// result. GRDB's `ValueObservation.values(in:)`, for ``ModelContext``'s fetches, counts and
/// aggregates (``ModelContext/observe(_:)-(FetchDescriptor<T>)``). Saves that leave the result
/// as it was bring no element. A consumer slower than the saves gets the newest result, not
/// every one in between. Iterating starts the watch; it ends when the task iterating is
/// cancelled or the iterator is dropped, or with an error when the store is dropped
/// (`notFound`), its schema changes (`schemaMismatch`) or the daemon stops (`unavailable`).
public struct ModelObservation<Element>: AsyncSequence {
    public typealias Failure = any Error

    let store: any StoreConnection
    let query: WatchedQuery
    /// Makes each element from an update; called in order, one at a time, by one iterator.
    let makeTransform: () -> (WatchUpdate) async throws -> Element

    public func makeAsyncIterator() -> Iterator {
        // The newest update kept when the consumer is behind: each carries its whole result, so
        // one skipped loses nothing.
        Iterator(
            feed: StoreFeed(.newest) { [store, query] body in try await store.watch(query, body) },
            transform: makeTransform())
    }

    public struct Iterator: AsyncIteratorProtocol {
        let feed: StoreFeed<WatchUpdate>
        let transform: (WatchUpdate) async throws -> Element

        public mutating func next() async throws -> Element? {
            try await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> Element? {
            guard let update = try await feed.next(isolation: actor) else { return nil }
            return try await transform(update)
        }
    }
}

/// One result of an observed fetch.
public struct ObservedResults<T: PersistentModel> {
    /// The models the fetch selects now, in its order.
    public let models: [T]
    /// How ``models`` differ from the previous element's (nil in the first element), with moves
    /// associated: `models == previous.models.applying(difference)`.
    public let difference: CollectionDifference<T>?
    /// Models in both results whose saved values changed.
    public let updated: [T]
    /// The history token the result is true at (nil when nothing was ever saved).
    public let token: DefaultHistoryToken?
}

extension ModelContext {
    /// Observes a fetch: its models now, then each time a save changes them, with the
    /// difference from the last result. The models are this context's (as its fetches return),
    /// with the objects of their relationships loaded as a fetch brings them
    /// (``FetchDescriptor/relationshipKeyPathsForPrefetching`` narrows that); the results are of
    /// saved data — this context's unsaved changes are not in them.
    public func observe<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> ModelObservation<
        ObservedResults<T>
    > {
        var request = try descriptor.storeDescriptor(in: core.types)
        // A watch sends no related objects: they are loaded after each result, as a fetch's.
        let related = Set(request.relationshipKeyPathsForPrefetching.compactMap(\.components.first))
        request.relationshipKeyPathsForPrefetching = []
        let fetched = request.propertiesToFetch
        let core = core
        return ModelObservation(store: core.container.store, query: .fetch(request)) {
            var previous: (snapshots: [ObjectSnapshot], models: [T])?
            return { update in
                guard case .objects(let snapshots) = update.result else {
                    return ObservedResults(models: [], difference: nil, updated: [], token: update.token)
                }
                let models = try await core.perform {
                    var models: [T] = []
                    models.reserveCapacity(snapshots.count)
                    for snapshot in snapshots {
                        let record = try core.merge(snapshot, attributesFetched: fetched)
                        // `as!`: the fetch was of T, so each record's entity is T's or a subclass's.
                        models.append(core.object(for: record) as! T)
                    }
                    try await core.loadRelated(of: snapshots, through: related)
                    return models
                }
                var difference: CollectionDifference<T>?
                var updated: [T] = []
                if let (oldSnapshots, oldModels) = previous {
                    let change = ObjectsDifference(from: oldSnapshots, to: snapshots)
                    difference = Self.collectionDifference(change, old: oldModels, new: models)
                    updated = change.updated.map { models[$0.offset] }
                }
                previous = (snapshots, models)
                return ObservedResults(models: models, difference: difference, updated: updated, token: update.token)
            }
        }
    }

    /// Observes how many objects a fetch selects: the count now, then each new count.
    public func observeCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> ModelObservation<Int> {
        var request = try descriptor.storeDescriptor(in: core.types)
        request.relationshipKeyPathsForPrefetching = []
        return ModelObservation(store: core.container.store, query: .count(request)) {
            { update in
                guard case .count(let count) = update.result else { return 0 }
                return count
            }
        }
    }

    /// Observes grouped aggregates: the rows now, then the rows each time a save changes them.
    public func observe<T: PersistentModel>(_ descriptor: AggregateDescriptor<T>) throws -> ModelObservation<
        [AggregateResult<T>]
    > {
        let (request, groupNames) = try descriptor.storeDescriptor(in: core.types)
        return ModelObservation(store: core.container.store, query: .aggregate(request)) {
            { update in
                guard case .groups(let rows) = update.result else { return [] }
                return rows.map { AggregateResult(values: $0, groupNames: groupNames) }
            }
        }
    }

    /// The store's difference as Swift's, over this context's models.
    static func collectionDifference<T>(_ change: ObjectsDifference, old: [T], new: [T]) -> CollectionDifference<T>? {
        var changes: [CollectionDifference<T>.Change] = []
        for deletion in change.deleted {
            changes.append(.remove(offset: deletion.offset, element: old[deletion.offset], associatedWith: nil))
        }
        for insertion in change.inserted {
            changes.append(.insert(offset: insertion.offset, element: new[insertion.offset], associatedWith: nil))
        }
        for move in change.moved {
            changes.append(.remove(offset: move.from, element: old[move.from], associatedWith: move.to))
            changes.append(.insert(offset: move.to, element: new[move.to], associatedWith: move.from))
        }
        return CollectionDifference(changes)
    }
}

extension ContextCore {
    /// Loads the objects that `snapshots`' relationships named in `names` hold and the context
    /// has not loaded, as a fetch prefetching those relationships would have brought them.
    func loadRelated(of snapshots: [ObjectSnapshot], through names: Set<String>) async throws {
        guard !names.isEmpty else { return }
        var missing: [PersistentIdentifier] = [], seen: Set<PersistentIdentifier> = []
        for snapshot in snapshots {
            for (name, targets) in snapshot.relationshipIDs where names.contains(name) {
                for id in targets where !(records[id]?.isLoaded ?? false) && seen.insert(id).inserted {
                    missing.append(id)
                }
            }
        }
        if !missing.isEmpty { try await load(missing) }
    }
}
