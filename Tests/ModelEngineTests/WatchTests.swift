import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import ModelStorage
import StandardBackends
import Testing

/// The backends watches are tested on: every backend, PostgreSQL on the suite's server.
enum WatchBackend: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    var description: String { rawValue }
}

/// A store with the hub a daemon gives each store.
struct WatchedStore: Sendable {
    let container: ModelContainer
    let hub: WatchHub
    let directory: URL?

    static func open(_ kind: WatchBackend, schema: Schema) async throws -> WatchedStore {
        var directory: URL?
        let url: String
        switch kind {
        case .memory: url = "memory:watch"
        case .sqlite:
            directory = try makeTemporaryDirectory()
            url = "sqlite://\(directory!.path)/store.sqlite" // just made
        case .postgres: url = try PostgresServer.freshStoreURL()
        }
        let container = try await ModelContainer.open(url: url, schema: schema, registry: .standard)
        return WatchedStore(container: container, hub: WatchHub(backend: container.backend), directory: directory)
    }

    /// Saves `context` and tells the hub, as the daemon does after a save.
    @discardableResult
    func save(_ context: ModelContext) async throws -> HistoryToken? {
        let result = try await context.save()
        hub.saved(result.token, touching: result.touchedEntities)
        return result.token
    }

    func close() async {
        hub.close(with: ModelError(.notFound, "closed"))
        await container.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }
}

/// Runs `body` with a watched store, closed afterwards whatever happens.
func withWatchedStore(
    _ kind: WatchBackend, schema: Schema = SampleTrips.schema, _ body: (WatchedStore) async throws -> Void
) async throws {
    let store = try await WatchedStore.open(kind, schema: schema)
    do {
        try await body(store)
    } catch {
        await store.close()
        throw error
    }
    await store.close()
}

/// Waits for `watch`'s next update, failing after a minute (a hang guard, not a timing).
func nextUpdate(_ watch: QueryWatch) async throws -> WatchUpdate {
    try await withThrowingTaskGroup(of: WatchUpdate?.self) { group in
        nonisolated(unsafe) let watch = watch // used by the one child task only, while this waits
        group.addTask { try await watch.next() }
        group.addTask {
            try await Task.sleep(for: .seconds(60))
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return try #require(first, "the watch reported nothing within a minute")
    }
}

@Suite struct WatchTests {
    /// A date of its own for each step (trips are unique in name and dates).
    static func day(_ step: Int) -> Value {
        .date(Timestamp(Date(timeIntervalSince1970: 1_800_000_000 + Double(step) * 86_400)))
    }

    static func predicate(_ text: String) throws -> ModelCore.Predicate { try PredicateParser.parse(text) }

    /// The queries the randomized test watches: a window of a sorted fetch (objects move in and
    /// out of the predicate, across the sort, and past the limit), a fetch through a to-one, a
    /// count, and grouped counts.
    static func queries() throws -> [WatchedQuery] {
        [
            .fetch(
                FetchDescriptor(
                    entityName: "Trip", predicate: try predicate(#"destination IN {"A", "B"}"#),
                    sortBy: [SortDescriptor("name"), SortDescriptor("destination", ascending: false)], limit: 6)),
            .fetch(
                FetchDescriptor(
                    entityName: "BucketListItem", predicate: try predicate(#"trip.destination == "A""#),
                    sortBy: [SortDescriptor("title", ascending: false)])),
            .count(FetchDescriptor(entityName: "BucketListItem", predicate: try predicate("isInPlan == true"))),
            .aggregate(
                AggregateDescriptor(
                    entityName: "Trip", groupBy: ["destination"], aggregations: [Aggregation("n", .count)])),
        ]
    }

    /// Random saves from three contexts (inserts, updates that move objects in and out of the
    /// predicates and across the sorts, deletes with cascades). One set of watches is read after
    /// every save that changed its result: each reports exactly then, at the save's token, with
    /// a difference that turns the last result into a fresh fetch's. Another set is read only
    /// every ninth save: each reports once for all the saves in between (merged), equal to a
    /// fresh fetch at the newest token.
    @Test(arguments: WatchBackend.allCases)
    func differencesRebuildEveryResult(_ kind: WatchBackend) async throws {
        try await withWatchedStore(kind) { store in
            var random = SeededRandom(seed: 0x5eed_0042)
            let queries = try Self.queries()
            let eager = try queries.map { try QueryWatch($0, on: store.container, hub: store.hub) }
            let slow = try queries.map { try QueryWatch($0, on: store.container, hub: store.hub) }
            var eagerLast: [WatchUpdate] = [], slowLast: [WatchUpdate] = []
            for watch in eager { eagerLast.append(try await nextUpdate(watch)) }
            for watch in slow { slowLast.append(try await nextUpdate(watch)) }
            let contexts = (0..<3).map {
                store.container.makeContext(author: "session\($0)", mergePolicy: .objectTrump)
            }
            var trips: [PersistentIdentifier] = [], items: [PersistentIdentifier] = []
            var reported = 0, merged = 0
            var token: HistoryToken?

            for step in 1...120 {
                let context = random.pick(contexts)
                switch random.int(0...9) {
                case 0, 1, 2:
                    _ = try await context.insert(
                        random.chance(0.3) ? "PersonalTrip" : "Trip",
                        attributes: [
                            "name": .string("t\(random.int(0...20))"),
                            "destination": .string(random.pick(["A", "B", "C"])),
                            "startDate": Self.day(step), "endDate": Self.day(step),
                        ])
                case 3,
                    4 where !trips.isEmpty:
                    _ = try await context.insert(
                        "BucketListItem",
                        attributes: [
                            "title": .string("i\(random.int(0...30))"), "isInPlan": .bool(random.chance(0.5)),
                        ],
                        relationships: ["trip": .toOne(random.pick(trips))])
                case 5,
                    6 where !trips.isEmpty:
                    try await context.update(
                        random.pick(trips),
                        attributes: random.chance(0.5)
                            ? ["destination": .string(random.pick(["A", "B", "C"]))]
                            : ["name": .string("t\(random.int(0...20))")])
                case 7 where !items.isEmpty:
                    try await context.update(
                        random.pick(items),
                        attributes: ["isInPlan": .bool(random.chance(0.5)), "title": .string("i\(random.int(0...30))")])
                case 8 where !trips.isEmpty:
                    try await context.delete(random.pick(trips)) // cascades to its items
                case 9 where !items.isEmpty:
                    try await context.delete(random.pick(items))
                default:
                    _ = try await context.insert(
                        "Trip",
                        attributes: [
                            "name": .string("t\(random.int(0...20))"), "destination": .string("A"),
                            "startDate": Self.day(step),
                            "endDate": Self.day(step),
                        ])
                }
                // A save that changed nothing (a delete of an object a cascade took) has no token.
                if let saved = try await store.save(context) { token = saved }
                trips = try await store.container.makeContext().fetch(
                    FetchDescriptor(entityName: "Trip", resultType: .identifiers)
                ).identifiers
                items = try await store.container.makeContext().fetch(
                    FetchDescriptor(entityName: "BucketListItem", resultType: .identifiers)
                ).identifiers

                for (index, query) in queries.enumerated() {
                    let (expected, at) = try await Self.fresh(query, store.container.backend)
                    #expect(at == token)
                    if expected != eagerLast[index].result {
                        let update = try await nextUpdate(eager[index])
                        #expect(
                            update.token == token,
                            "step \(step), \(query.entityName): reported at \(String(describing: update.token))")
                        #expect(update.result == expected, "step \(step), \(query.entityName)")
                        Self.checkDifference(update, after: eagerLast[index], step: step)
                        eagerLast[index] = update
                        reported += 1
                    }
                    if step % 9 == 0, expected != slowLast[index].result {
                        let update = try await nextUpdate(slow[index])
                        #expect(update.token == token)
                        #expect(update.result == expected, "step \(step) (slow), \(query.entityName)")
                        Self.checkDifference(update, after: slowLast[index], step: step)
                        slowLast[index] = update
                        merged += 1
                    }
                }
            }
            // The test means something only if results changed often.
            #expect(reported > 100)
            #expect(merged > 10)
        }
    }

    /// The query's result read fresh, and the token it is true at.
    static func fresh(_ query: WatchedQuery, _ backend: any StorageBackend) async throws -> (WatchResult, HistoryToken?)
    {
        switch query {
        case .fetch(let descriptor):
            let (result, token) = try await backend.fetchWithToken(descriptor)
            return (.objects(result.objects), token)
        case .count(let descriptor):
            var descriptor = descriptor
            descriptor.resultType = .count
            let (result, token) = try await backend.fetchWithToken(descriptor)
            return (.count(result.count), token)
        case .aggregate(let descriptor):
            let (rows, token) = try await backend.aggregateWithToken(descriptor)
            return (.groups(rows), token)
        }
    }

    /// A fetch's difference turns the previous result into the new one, and moves nothing that
    /// was not in both.
    static func checkDifference(_ update: WatchUpdate, after previous: WatchUpdate, step: Int) {
        guard case .objects(let old) = previous.result, case .objects(let new) = update.result else {
            #expect(update.difference == nil)
            return
        }
        guard let difference = update.difference else {
            Issue.record("step \(step): a fetch's update without a difference")
            return
        }
        #expect(!difference.isEmpty)
        #expect(difference.applied(to: old) == new, "step \(step)")
    }

    /// Saves that touch none of a watch's entities do not make it read again; a save that does,
    /// but leaves its result as it was, makes it read but sends nothing.
    @Test(arguments: WatchBackend.allCases)
    func savesOfOtherEntitiesAreNotLookedAt(_ kind: WatchBackend) async throws {
        try await withWatchedStore(kind, schema: Catalog.schema) { store in
            let people = try QueryWatch(
                .count(FetchDescriptor(entityName: "Person")), on: store.container, hub: store.hub)
            #expect(people.watchedEntities.isDisjoint(with: ["Item", "Shelf", "Library"]))
            let first = try await nextUpdate(people)
            #expect(first.result == .count(0))
            let context = store.container.makeContext()
            for n in 0..<20 {
                _ = try await context.insert("Item", attributes: ["title": .string("item \(n)")])
                try await store.save(context)
            }
            _ = try await context.insert("Person", attributes: ["name": .string("Ada")])
            let token = try await store.save(context)
            let update = try await nextUpdate(people)
            #expect(update.result == .count(1))
            #expect(update.token == token)
            // One read to begin, one for the save of a Person: none for the 20 saves of items.
            #expect(people.readCount == 2)
        }
    }

    /// A watch ends when its hub closes (the store dropped), saying why.
    @Test(arguments: [WatchBackend.memory, .sqlite])
    func aClosedStoreEndsItsWatches(_ kind: WatchBackend) async throws {
        try await withWatchedStore(kind) { store in
            let watch = try QueryWatch(.count(FetchDescriptor(entityName: "Trip")), on: store.container, hub: store.hub)
            _ = try await nextUpdate(watch)
            store.hub.close(with: ModelError(.notFound, "store 'x' was dropped"))
            let error = await #expect(throws: ModelError.self) { try await watch.next() }
            #expect(error?.code == .notFound)
            // A watch begun after the store closed is refused.
            let late = try QueryWatch(.count(FetchDescriptor(entityName: "Trip")), on: store.container, hub: store.hub)
            await #expect(throws: ModelError.self) { try await late.next() }
        }
    }
}
