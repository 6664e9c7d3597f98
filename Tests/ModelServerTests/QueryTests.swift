import Foundation
import ModelRemote
import ModelCore
import ModelFixtures
import ModelTesting
import Testing

/// QueryService over a real socket: reads and writes without a session.
@Suite(.isolatedStore(schema: Catalog.schema))
struct QueryTests {
    var store: TestStore { get throws { try #require(TestStore.current) } }

    /// Inserts `count` items titled item-00001… with rank i % 7, in one save.
    private func items(_ store: TestStore, _ count: Int) async throws {
        let edits: [ObjectEdit] = (1...count).map { i in
            .insert(
                entity: "Item",
                attributes: [
                    "title": .string(String(format: "item-%05d", i)), "rank": .int(Int64(i % 7)),
                    "blob": .data(Data(repeating: UInt8(i % 256), count: 200)),
                ],
                relationships: [:], id: nil)
        }
        try await store.client.apply(edits, in: store.name)
    }

    @Test func largeFetchesStreamInBatches() async throws {
        let store = try store
        try await items(store, 2_500)
        let batches = Shared<[Int]>([])
        let titles = Shared<[String]>([])
        let count = try await store.client.fetch(
            FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("title", ascending: false)]),
            in: store.name, batchSize: 1_000
        ) { batch in
            batches.update { $0.append(batch.count) }
            titles.update { $0 += batch.map { $0["title"].textForm ?? "" } }
        }
        #expect(count == 2_500)
        #expect(batches.value == [1_000, 1_000, 500])
        let expected = (1...2_500).reversed().map { String(format: "item-%05d", $0) }
        #expect(titles.value == expected)

        let all = try await store.client.fetch(
            FetchDescriptor(
                entityName: "Item", predicate: where_("rank == 3"), offset: 10, limit: 100,
                resultType: .identifiers), in: store.name)
        #expect(all.identifiers.count == 100)
        #expect(
            try await store.client.count(
                FetchDescriptor(entityName: "Item", predicate: where_("rank == 3")), in: store.name) == 357)
    }

    /// Batches stay under the message size limit, however big each object is.
    @Test func bigObjectsComeInSmallerBatches() async throws {
        let store = try store
        let blob = Data(repeating: 7, count: 1_000_000)
        for part in 0..<5 {
            try await store.client.apply(
                (1...4).map { i in
                    .insert(
                        entity: "Item", attributes: ["title": .string("big \(part * 4 + i)"), "blob": .data(blob)],
                        relationships: [:], id: nil)
                }, in: store.name)
        }
        let batches = Shared<[Int]>([])
        let count = try await store.client.fetch(FetchDescriptor(entityName: "Item"), in: store.name) { batch in
            batches.update { $0.append(batch.count) }
            #expect(batch.allSatisfy { $0["blob"] == .data(blob) })
        }
        #expect(count == 20)
        let sizes = batches.value
        // A response is sent once it holds about a megabyte: two of these objects.
        #expect(sizes.reduce(0, +) == 20 && sizes.allSatisfy { $0 <= 2 }, "\(sizes)")
    }

    @Test func aggregatesAreComputedByTheStore() async throws {
        let store = try store
        try await items(store, 70)
        let rows = try await store.client.aggregate(
            AggregateDescriptor(
                entityName: "Item", predicate: where_("rank >= 5"), groupBy: ["rank"],
                aggregations: [Aggregation("n", .count), Aggregation("first", .min, "title")]), in: store.name)
        #expect(
            rows == [
                ["rank": .int(5), "n": .int(10), "first": .string("item-00005")],
                ["rank": .int(6), "n": .int(10), "first": .string("item-00006")],
            ])
    }

    @Test func applyIsOneAtomicSaveWithReferencesBetweenNewObjects() async throws {
        let store = try store
        let library = PersistentIdentifier(
            storeIdentifier: store.info.storeIdentifier, entityName: "Library", key: .temporary(UUID()))
        let outcome = try await store.client.apply(
            [
                .insert(entity: "Library", attributes: ["name": .string("Central")], relationships: [:], id: library),
                .insert(
                    entity: "Shelf", attributes: ["name": .string("A")], relationships: ["library": .toOne(library)],
                    id: nil),
            ], in: store.name, author: "loader", returnTransaction: true)
        #expect(outcome.remappedIdentifiers.count == 2)
        #expect(outcome.transaction?.author == "loader" && outcome.transaction?.changes.count == 2)
        let libraryID = try #require(outcome.remappedIdentifiers[library])
        #expect(try await store.client.objects([libraryID], in: store.name).first?.toMany("shelves").count == 1)
        // Inserts alone, which the daemon saves without a context, carry their author and
        // transaction the same way.
        let plain = try await store.client.apply(
            [.insert(entity: "Library", attributes: ["name": .string("Branch")], relationships: [:], id: nil)],
            in: store.name, author: "importer", returnTransaction: true)
        #expect(plain.transaction?.author == "importer" && plain.transaction?.changes.map(\.kind) == [.insert])
        #expect(plain.transaction?.changes.first?.id == plain.remappedIdentifiers.values.first)

        // A failing apply writes nothing: the second item collides with the first on sku.
        let before = try await store.client.history(after: nil, in: store.name).count
        await expectError(.uniqueConstraint) {
            try await store.client.apply(
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a"), "sku": .string("S-1")], relationships: [:],
                        id: nil),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b"), "sku": .string("S-1")], relationships: [:],
                        id: nil),
                ], in: store.name)
        }
        #expect(try await store.client.count(FetchDescriptor(entityName: "Item"), in: store.name) == 0)
        #expect(try await store.client.history(after: nil, in: store.name).count == before)
    }

    /// Plain inserts, which the daemon saves from runs of values (no table per object): every
    /// object comes back remapped from a temporary URI of its own to the permanent one history
    /// records, with its values; an object that is not fit fails the whole save with the error
    /// the general way gives, naming its change, and nothing is written.
    @Test func plainInsertsAreSavedFromRunsAndAnsweredInFull() async throws {
        let store = try store
        let names = (1...300).map { "library-\($0)" }
        let edits: [ObjectEdit] =
            names.map { .insert(entity: "Library", attributes: ["name": .string($0)], relationships: [:], id: nil) }
            + [.insert(entity: "Author", attributes: ["name": .string("Ada")], relationships: [:], id: nil)]
        let outcome = try await store.client.apply(edits, in: store.name, author: "loader", returnTransaction: true)
        let transaction = try #require(outcome.transaction)
        #expect(transaction.author == "loader")
        #expect(transaction.changes.count == 301 && transaction.changes.allSatisfy { $0.kind == .insert })
        #expect(outcome.remappedIdentifiers.count == 301)
        #expect(
            outcome.remappedIdentifiers.keys.allSatisfy {
                $0.isTemporary && $0.storeIdentifier == store.info.storeIdentifier
            })
        #expect(Set(outcome.remappedIdentifiers.values) == Set(transaction.changes.map(\.id)))
        // The client asked for runs: the objects in the order of the inserts, two runs.
        #expect(outcome.insertedRuns.map(\.count) == [300, 1])
        var inOrder: [PersistentIdentifier] = []
        for run in outcome.insertedRuns { run.identifiers { inOrder.append($1) } }
        #expect(inOrder == transaction.changes.map(\.id))
        let saved = try await store.client.objects(transaction.changes.map(\.id), in: store.name)
        #expect(saved.map { $0.attributes["name"] } == (names + ["Ada"]).map { .string($0) })

        let before = try await store.client.history(after: nil, in: store.name).count
        var wrong = edits
        wrong[2] = .insert(entity: "Library", attributes: ["name": .int(3)], relationships: [:], id: nil)
        let typeError = await expectError(.typeMismatch) { try await store.client.apply(wrong, in: store.name) }
        #expect(typeError?.message.hasPrefix("change 3") == true, "\(String(describing: typeError))")
        var missing = edits
        missing[5] = .insert(entity: "Library", attributes: [:], relationships: [:], id: nil)
        await expectError(.validationFailed) { try await store.client.apply(missing, in: store.name) }
        #expect(try await store.client.count(FetchDescriptor(entityName: "Library"), in: store.name) == 300)
        #expect(try await store.client.history(after: nil, in: store.name).count == before)
    }

    @Test func batchDeleteAndUpdateAreSavesInHistory() async throws {
        let store = try store
        try await items(store, 30)
        let updated = try await store.client.batchUpdate(
            "Item", where: where_("rank == 0"), set: ["label": .string("zero")], in: store.name, author: "janitor")
        #expect(updated.matched == 4 && updated.token != nil)
        #expect(
            try await store.values("Item", "label == \"zero\"", key: "title", sort: ["title"]) == [
                "item-00007", "item-00014", "item-00021", "item-00028",
            ])
        let deleted = try await store.client.batchDelete(
            "Item", where: where_("rank <= 1"), in: store.name, author: "janitor")
        #expect(deleted.matched == 9 && deleted.deleted == 9)
        #expect(try await store.client.count(FetchDescriptor(entityName: "Item"), in: store.name) == 21)
        let history = try await store.client.history(after: nil, in: store.name, author: "janitor")
        #expect(history.map(\.token) == [updated.token, deleted.token].compactMap { $0 })
        #expect(history.last?.changes.count == 9)
        let none = try await store.client.batchDelete("Item", where: where_("rank == 99"), in: store.name)
        #expect(none.matched == 0 && none.token == nil)
        // Values already held: matched, nothing saved, no token.
        let saved = try await store.client.history(after: nil, in: store.name).count
        let held = try await store.client.batchUpdate(
            "Item", where: where_("rank == 2"), set: ["rank": .int(2)], in: store.name)
        #expect(held.matched == 5 && held.token == nil)
        #expect(try await store.client.history(after: nil, in: store.name).count == saved)
    }

    /// A batch update's values are checked before any object is looked for: a value no object
    /// could take is refused whether or not objects match, and nothing is saved.
    @Test func aBatchUpdateOfAValueNoObjectCouldTakeIsRefusedWhetherOrNotObjectsMatch() async throws {
        let store = try store
        try await items(store, 10)
        for predicate in ["rank == 99", "rank == 1"] {
            await expectError(.typeMismatch) {
                _ = try await store.client.batchUpdate(
                    "Item", where: where_(predicate), set: ["price": .double(.nan)], in: store.name)
            }
            await expectError(.unknownProperty) {
                _ = try await store.client.batchUpdate(
                    "Item", where: where_(predicate), set: ["colour": .string("red")], in: store.name)
            }
        }
        #expect(try await store.client.history(after: nil, in: store.name).count == 1)
        #expect(try await store.values("Item", "price != nil", key: "title").isEmpty)
    }

    @Test func historyAfterATokenWithAuthorAndLimit() async throws {
        let store = try store
        for author in ["a", "b", "a", "b", "a"] {
            try await store.client.apply(
                [.insert(entity: "Library", attributes: ["name": .string(author)], relationships: [:], id: nil)],
                in: store.name, author: author)
        }
        let all = try await store.client.history(after: nil, in: store.name)
        #expect(all.map(\.token.rawValue) == [1, 2, 3, 4, 5])
        #expect(
            try await store.client.history(after: HistoryToken(2), in: store.name).map(\.token.rawValue) == [3, 4, 5])
        #expect(
            try await store.client.history(after: nil, in: store.name, author: "a").map(\.token.rawValue) == [1, 3, 5])
        #expect(
            try await store.client.history(after: HistoryToken(1), in: store.name, author: "a", limit: 1).map(
                \.token.rawValue) == [3])
        #expect(try await store.client.history(after: HistoryToken(5), in: store.name).isEmpty)
    }

    /// A transaction with more changes than fit in one response arrives whole.
    @Test func hugeTransactionsArriveWhole() async throws {
        let store = try store
        try await items(store, 20_000)
        let history = try await store.client.history(after: nil, in: store.name)
        #expect(history.count == 1)
        #expect(history.first?.changes.count == 20_000)
        #expect(Set(history.first?.changes.map(\.id) ?? []).count == 20_000)
    }

    /// A follower of a store that is dropped hears NOT_FOUND, as a watch does; a negative token is
    /// refused as one.
    @Test func aFollowerOfADroppedStoreHearsNotFound() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                try await client.createStore("gone", schema: SampleTrips.schema)
                try await client.apply(
                    [
                        .insert(
                            entity: "Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"), relationships: [:],
                            id: nil)
                    ],
                    in: "gone")
                // A token below 0 is no token.
                let negative = await expectError(.invalidArgument) {
                    _ = try await client.history(after: HistoryToken(-1), in: "gone")
                }
                #expect(negative?.message.contains("not a history token") == true)
                let heard = TestEvent()
                let following = Task { () -> ModelError? in
                    do {
                        try await client.followHistory(after: nil, in: "gone") { _ in heard.signal() }
                        return nil
                    } catch let error as ModelError {
                        return error
                    }
                }
                #expect(await heard.wait(), "the follower heard of the save")
                try await client.dropStore("gone", force: true)
                let error = try await following.value
                #expect(
                    error?.code == .notFound && error?.message.contains("was dropped") == true,
                    "\(String(describing: error))")
            }
        }
    }

    @Test func followersHearOfNewSaves() async throws {
        let store = try store
        try await store.client.apply(
            [.insert(entity: "Library", attributes: ["name": .string("old")], relationships: [:], id: nil)],
            in: store.name)
        let seen = Shared<[Int64]>([])
        let events = [TestEvent(), TestEvent()]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await store.client.followHistory(after: HistoryToken(1), in: store.name) { transaction in
                    let count = seen.update {
                        $0.append(transaction.token.rawValue); return $0.count
                    }
                    if count <= events.count { events[count - 1].signal() }
                }
            }
            // "y" is saved once the follower has seen "x", so it arrives while the stream follows.
            for (name, event) in zip(["x", "y"], events) {
                try await store.client.apply(
                    [.insert(entity: "Library", attributes: ["name": .string(name)], relationships: [:], id: nil)],
                    in: store.name)
                #expect(await event.wait(), "the follower did not see \(name)")
            }
            group.cancelAll()
        }
        #expect(seen.value == [2, 3])
    }
}
