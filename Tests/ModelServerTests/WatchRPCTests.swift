import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import ModelRemote
import ModelTesting
import StandardBackends
import Testing

/// QueryService.Watch over a real socket: live queries of fetches, counts and aggregates.
@Suite(.isolatedStore(schema: Catalog.schema))
struct WatchRPCTests {
    var store: TestStore { get throws { try #require(TestStore.current) } }

    private func item(_ title: String, rank: Int) -> ObjectEdit {
        .insert(
            entity: "Item", attributes: ["title": .string(title), "rank": .int(Int64(rank))], relationships: [:],
            id: nil)
    }

    /// The fetch's objects, read fresh.
    private func fresh(_ descriptor: FetchDescriptor, _ store: TestStore) async throws -> [ObjectSnapshot] {
        try await store.client.fetch(descriptor, in: store.name).objects
    }

    @Test func aFetchWatchReportsEachChangeAsADifference() async throws {
        let store = try store
        let descriptor = FetchDescriptor(
            entityName: "Item", predicate: where_("rank >= 5"), sortBy: [SortDescriptor("title")], limit: 3)
        let feed = WatchFeed(
            store.client, .fetch(descriptor), store: store.name, storeIdentifier: store.info.storeIdentifier)
        let first = try await feed.next()
        #expect(first.result == .objects([]))
        #expect(first.token == nil)

        let saved = try await store.client.apply([item("b", rank: 5), item("d", rank: 6)], in: store.name)
        let inserted = try await feed.next()
        #expect(inserted.token == saved.token)
        #expect(inserted.difference?.inserted.map(\.offset) == [0, 1])
        #expect(inserted.result == .objects(try await fresh(descriptor, store)))

        // A save the predicate does not match sends nothing: the next update is the one after.
        _ = try await store.client.apply([item("a", rank: 1)], in: store.name)
        let moved = try await store.client.apply([item("a2", rank: 9), item("c", rank: 7)], in: store.name)
        let update = try await feed.next()
        #expect(update.token == moved.token)
        // a2 and c come in at 0 and 2; d falls out of the window of three.
        #expect(update.difference?.inserted.map(\.offset) == [0, 2])
        #expect(update.difference?.deleted.map(\.offset) == [1])
        let objects = try await fresh(descriptor, store)
        #expect(update.result == .objects(objects))
        #expect(objects.map { $0["title"] } == [.string("a2"), .string("b"), .string("c")])

        // An update of a watched object names the changed properties.
        let b = objects[1].id
        let changed = try await store.client.apply(
            [.update(b, attributes: ["label": .string("blue")], relationships: [:])], in: store.name)
        let relabelled = try await feed.next()
        #expect(relabelled.token == changed.token)
        #expect(relabelled.difference?.updated.map(\.changedProperties) == [["label"]])
        #expect(relabelled.difference?.updated.first?.offset == 1)
        #expect(feed.waiting == 0)
        feed.cancel()
    }

    @Test func countAndAggregateWatchesReportNewValues() async throws {
        let store = try store
        let count = WatchFeed(
            store.client, .count(FetchDescriptor(entityName: "Item", predicate: where_("rank > 2"))), store: store.name)
        let groups = WatchFeed(
            store.client,
            .aggregate(
                AggregateDescriptor(entityName: "Item", groupBy: ["rank"], aggregations: [Aggregation("n", .count)])),
            store: store.name)
        #expect(try await count.next().result == .count(0))
        #expect(try await groups.next().result == .groups([]))
        _ = try await store.client.apply([item("x", rank: 3), item("y", rank: 3), item("z", rank: 1)], in: store.name)
        #expect(try await count.next().result == .count(2))
        #expect(
            try await groups.next().result
                == .groups([["rank": .int(1), "n": .int(1)], ["rank": .int(3), "n": .int(2)]]))
    }

    @Test func badWatchRequestsAreRefusedWithTheReason() async throws {
        let store = try store
        let unknown = WatchFeed(store.client, .count(FetchDescriptor(entityName: "Nope")), store: store.name)
        let error = try await unknown.end() as? ModelError
        #expect(error?.code == .unknownEntity)
        var prefetching = FetchDescriptor(entityName: "Shelf")
        prefetching.relationshipKeyPathsForPrefetching = ["items"]
        let refused = try await WatchFeed(store.client, .fetch(prefetching), store: store.name).end() as? ModelError
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.message.contains("prefetch") == true)
        let missing =
            try await WatchFeed(store.client, .count(FetchDescriptor(entityName: "Item")), store: "no-such-store")
            .end() as? ModelError
        #expect(missing?.code == .notFound)
        // The daemon still serves the store.
        #expect(try await store.client.count(FetchDescriptor(entityName: "Item"), in: store.name) == 0)
    }

    /// Another process saving to the store's file (an embedded stack) reaches the watch within
    /// the hub's poll interval.
    @Test func savesByAnotherProcessOnTheFileReachWatches() async throws {
        let (feed, embedded) = try await itemCountBesideAnotherProcess(try store)
        let context = embedded.makeContext(author: "embedded")
        _ = try await context.insert("Item", attributes: ["title": .string("from outside")])
        let started = ContinuousClock.now
        let token = try await context.save().token
        let update = try await feed.next()
        let delay = ContinuousClock.now - started
        #expect(update.result == .count(1))
        #expect(update.token == token)
        print("a save by another process reached the watch after \(delay)")
        await embedded.close()
    }
}

/// Watches end with a status that says why.
@Suite struct WatchEndTests {
    @Test func droppingTheStoreEndsItsWatchesNotFound() async throws {
        try await TestDaemon.shared.withClient { client in
            let name = "watch-drop-\(UInt32.random(in: 0...UInt32.max))"
            _ = try await client.createStore(name, schema: Catalog.schema)
            let feed = WatchFeed(client, .count(FetchDescriptor(entityName: "Item")), store: name)
            _ = try await feed.next()
            _ = try await client.dropStore(name, force: true)
            let error = try await feed.end() as? ModelError
            #expect(error?.code == .notFound)
            #expect(error?.message.contains(name) == true)
        }
    }

    @Test func aSchemaChangeEndsWatchesFailedPrecondition() async throws {
        try await TestDaemon.shared.withClient { client in
            let name = "watch-schema-\(UInt32.random(in: 0...UInt32.max))"
            _ = try await client.createStore(name, schema: SampleTrips.schema)
            try await client.apply(
                [
                    .insert(
                        entity: "BucketListItem", attributes: ["title": .string("swim")], relationships: [:], id: nil)
                ],
                in: name)
            let feed = WatchFeed(client, .count(FetchDescriptor(entityName: "BucketListItem")), store: name)
            #expect(try await feed.next().result == .count(1))
            var schema = SampleTrips.schema
            let index = try #require(schema.entities.firstIndex { $0.name == "BucketListItem" })
            schema.entities[index].attributes.append(
                AttributeDescription(name: "cost", type: .double, defaultValue: .double(0)))
            try await client.migrateSchema(of: name, to: schema)
            let error = try await feed.end() as? ModelError
            #expect(error?.code == .schemaMismatch)
            #expect(error?.message.contains("schema") == true)
            _ = try await client.dropStore(name, force: true)
        }
    }

    @Test func stoppingTheDaemonEndsWatchesUnavailable() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                _ = try await client.createStore("w", schema: Catalog.schema)
                let feed = WatchFeed(client, .count(FetchDescriptor(entityName: "Item")), store: "w")
                _ = try await feed.next()
                daemon.shutdown()
                let error = try await feed.end() as? ModelError
                #expect(error?.code == .unavailable)
            }
        }
    }
}
