import Foundation
import ModelCore
import ModelStorage

/// A query kept true: ``next()`` returns the current result, then waits for each save that
/// changes it. Saves that touch none of the query's entities (``WatchedQuery/entities(in:)``)
/// are not looked at; those that do make the watch read again, and report only when the result
/// differs. A watch that is slow to call ``next()`` gets one update covering every save since
/// its last: nothing piles up for it but the newest token. Not for use from two tasks at once.
public final class QueryWatch {
    public let query: WatchedQuery
    private let backend: any StorageBackend
    private let hub: WatchHub
    private let entities: Set<String>
    private var subscription: WatchSubscription?
    private var last: WatchUpdate?
    /// The newest token the hub woke the watch for.
    private var seen: HistoryToken?

    /// A watch of `query` on `container`'s store, told of saves by `hub` (the store's).
    public init(_ query: WatchedQuery, on container: ModelContainer, hub: WatchHub) throws(ModelError) {
        self.query = try query.validated(in: container.schema, storeIdentifier: container.storeIdentifier)
        self.backend = container.backend
        self.hub = hub
        self.entities = self.query.entities(in: container.schema)
    }

    /// The entities whose saves the watch looks at.
    public var watchedEntities: Set<String> { entities }

    /// How many times the watch has read its query: once to begin, then once per wake by a save
    /// that touched its entities (a measure of how well saves are narrowed).
    public private(set) var readCount = 0

    /// The first call: the current result. Each later call: waits for a save that changes the
    /// result, and returns it with its difference from the last one. Throws when the store is
    /// dropped (`notFound`) or its schema changes (`failedPrecondition`), or when cancelled.
    public func next() async throws -> WatchUpdate {
        guard let last, let subscription else {
            let (result, token) = try await read()
            subscription = try hub.subscribe(entities: entities, after: token)
            seen = token
            let first = WatchUpdate(token: token, result: result)
            self.last = first
            return first
        }
        var previous = last
        while true {
            let woken = try await subscription.mailbox.wait(after: seen)
            seen = woken
            let (result, token) = try await read()
            if let token, token > seen ?? HistoryToken(0) { seen = token }
            guard result != previous.result else {
                previous.token = token
                self.last = previous
                continue
            }
            var update = WatchUpdate(token: token, result: result)
            if case .objects(let old) = previous.result, case .objects(let new) = result {
                update.difference = ObjectsDifference(from: old, to: new)
            }
            self.last = update
            return update
        }
    }

    /// Ends the watch: the hub forgets it.
    public func cancel() {
        subscription = nil
    }

    private func read() async throws -> (WatchResult, HistoryToken?) {
        readCount += 1
        switch query {
        case .fetch(let descriptor):
            let (result, token) = try await backend.fetchWithToken(descriptor)
            let objects = result.objects
            guard objects.count <= WatchedQuery.maximumObjects else {
                throw ModelError(
                    .resourceExhausted,
                    "the watched fetch of \(descriptor.entityName) matches \(objects.count) objects, more than the \(WatchedQuery.maximumObjects) a watch keeps: give it a limit, or narrow its predicate",
                    context: ["entity": descriptor.entityName])
            }
            return (.objects(objects), token)
        case .count(let descriptor):
            let (result, token) = try await backend.fetchWithToken(descriptor)
            return (.count(result.count), token)
        case .aggregate(let descriptor):
            let (rows, token) = try await backend.aggregateWithToken(descriptor)
            return (.groups(rows), token)
        }
    }
}
