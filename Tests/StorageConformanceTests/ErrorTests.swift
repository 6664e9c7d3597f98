import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Bad requests fail with the right `ModelError.Code` and change nothing.
@Suite struct ErrorTests {
    /// A fetch descriptor and the code it must fail with.
    static let badFetches: [(FetchDescriptor, ModelError.Code)] = [
        (FetchDescriptor(entityName: "Nope"), .unknownEntity),
        (FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("colour")]), .unknownProperty),
        (FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("shelf")]), .invalidArgument),
        (FetchDescriptor(entityName: "Shelf", sortBy: [SortDescriptor("items.title")]), .invalidArgument),
        (
            FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("count", caseInsensitive: true)]),
            .invalidArgument
        ),
        (FetchDescriptor(entityName: "Item", offset: -1), .invalidArgument),
        (FetchDescriptor(entityName: "Item", limit: -1), .invalidArgument),
        (FetchDescriptor(entityName: "Item", propertiesToFetch: ["colour"]), .unknownProperty),
        (FetchDescriptor(entityName: "Item", relationshipKeyPathsForPrefetching: ["title"]), .invalidArgument),
        (FetchDescriptor(entityName: "Item", predicate: .equal("colour", .string("red"))), .unknownProperty),
        (FetchDescriptor(entityName: "Item", predicate: .equal("count", .string("many"))), .typeMismatch),
        (FetchDescriptor(entityName: "Item", predicate: .equal("added", .string("yesterday"))), .typeMismatch),
        (FetchDescriptor(entityName: "Item", predicate: .equal("shelf.items.title", .string("x"))), .invalidPredicate),
        // NaN, refused in text (`CAST("NaN", "double")`), is refused in a tree too, in any place.
        (FetchDescriptor(entityName: "Item", predicate: .equal("price", .double(.nan))), .invalidPredicate),
        (
            FetchDescriptor(
                entityName: "Item",
                predicate: .comparison(
                    Comparison(.keyPath("price"), .in, .list([.literal(.double(1)), .literal(.double(.nan))])))),
            .invalidPredicate
        ),
        (
            FetchDescriptor(
                entityName: "Item",
                predicate: .comparison(
                    Comparison(.arithmetic(.add, .keyPath("price"), .literal(.double(.nan))), .less, .literal(.int(1))))
            ),
            .invalidPredicate
        ),
        (FetchDescriptor(entityName: "Item", predicate: .equal("amount", .decimal(.nan))), .invalidPredicate),
        (
            FetchDescriptor(
                entityName: "Item",
                predicate: .comparison(Comparison(.keyPath("count"), .contains, .literal(.string("1"))))),
            .typeMismatch
        ),
    ]

    @Test(arguments: BackendKind.allCases)
    func badDescriptors(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            for (descriptor, code) in Self.badFetches {
                let error = await modelError { _ = try await store.backend.fetch(descriptor) }
                #expect(error?.code == code, "\(descriptor)")
                #expect(error?.message.isEmpty == false)
            }
            let badAggregates: [(AggregateDescriptor, ModelError.Code)] = [
                (AggregateDescriptor(entityName: "Nope", aggregations: [Aggregation("n", .count)]), .unknownEntity),
                (AggregateDescriptor(entityName: "Item", aggregations: []), .invalidArgument),
                (
                    AggregateDescriptor(entityName: "Item", aggregations: [Aggregation("s", .sum, "title")]),
                    .typeMismatch
                ),
                (AggregateDescriptor(entityName: "Item", aggregations: [Aggregation("s", .sum)]), .invalidArgument),
                (
                    AggregateDescriptor(
                        entityName: "Item", groupBy: ["shelf"], aggregations: [Aggregation("n", .count)]),
                    .invalidArgument
                ),
                (
                    AggregateDescriptor(
                        entityName: "Item", aggregations: [Aggregation("n", .count)], sortBy: [AggregateSort("m")]),
                    .invalidArgument
                ),
                (
                    AggregateDescriptor(
                        entityName: "Item", aggregations: [Aggregation("n", .count), Aggregation("n", .count)]),
                    .invalidArgument
                ),
                (
                    AggregateDescriptor(entityName: "Item", aggregations: [Aggregation("n", .count)], offset: -2),
                    .invalidArgument
                ),
            ]
            for (descriptor, code) in badAggregates {
                #expect(
                    await modelError { _ = try await store.backend.aggregate(descriptor) }?.code == code,
                    "\(descriptor)")
            }
            #expect(
                await modelError { _ = try await store.backend.history(after: nil, limit: -1) }?.code
                    == .invalidArgument)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func identifiersOfAnotherStore(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            let foreign = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Item", key: .permanent(1))
            let predicate = Predicate.comparison(Comparison(.keyPath(PropertyPath([])), .equal, .object(foreign)))
            #expect(
                await modelError {
                    _ = try await store.backend.fetch(FetchDescriptor(entityName: "Item", predicate: predicate))
                }?.code
                    == .invalidIdentifier)
            #expect(
                await modelError { _ = try await store.backend.snapshots(for: [ids[0], foreign]) }?.code
                    == .invalidIdentifier)
            #expect(
                await modelError { _ = try await store.backend.snapshots(for: [store.id("Nope", 1)]) }?.code
                    == .unknownEntity)
            let before = try await store.dump()
            var c = store.changes()
            c.update(ids[0], ["title": .string("x")])
            c.setRelationship(
                ids[0], "shelf",
                .toOne(PersistentIdentifier(storeIdentifier: UUID(), entityName: "Shelf", key: .permanent(1))))
            #expect(await modelError { try await store.save(c) }?.code == .invalidIdentifier)
            #expect(try await store.dump() == before)
        }
    }

    /// Every kind of bad change set fails with its code, and the store stays exactly as it was:
    /// no object, history entry or key is used up.
    @Test(arguments: BackendKind.allCases)
    func failedSavesLeaveTheStoreAsItWas(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            let before = try await store.dump()
            let temporary = PersistentIdentifier.temporary(storeIdentifier: store.storeIdentifier, entityName: "Item")
            func changes(_ build: (inout Changes) -> Void) -> Changes {
                var c = store.changes()
                c.insert("Item", ["title": .string("valid")])
                c.update(ids[1], ["title": .string("valid too")])
                c.delete(ids[5])
                build(&c)
                return c
            }
            let cases: [(String, Changes, ModelError.Code)] = [
                (
                    "update of a missing object", changes { $0.update(store.id("Item", 99), ["title": .string("x")]) },
                    .notFound
                ),
                ("unknown attribute", changes { $0.insert("Item", ["colour": .string("red")]) }, .unknownProperty),
                ("relationship as attribute", changes { $0.update(ids[0], ["shelf": .null]) }, .invalidArgument),
                (
                    "unknown relationship", changes { $0.setRelationship(ids[0], "owner", .toOne(nil)) },
                    .unknownProperty
                ),
                ("wrong type", changes { $0.update(ids[0], ["price": .string("cheap")]) }, .typeMismatch),
                ("unknown entity", changes { $0.insert("Nope", [:]) }, .unknownEntity),
                (
                    "unique", changes { $0.insert("Item", ["title": .string("dup"), "sku": .string("A-2")]) },
                    .uniqueConstraint
                ),
                (
                    "permanent insert", changes { $0.set.inserts.append(InsertedObject(id: store.id("Item", 50))) },
                    .invalidIdentifier
                ),
                (
                    "temporary update", changes { $0.set.updates.append(UpdatedObject(id: temporary)) },
                    .invalidIdentifier
                ),
                (
                    "temporary delete", changes { $0.set.deletes.append(DeletedObject(id: temporary)) },
                    .invalidIdentifier
                ),
                (
                    "inserted twice",
                    changes { c in
                        c.set.inserts.append(InsertedObject(id: temporary))
                        c.set.inserts.append(InsertedObject(id: temporary))
                    }, .invalidArgument
                ),
                (
                    "missing target", changes { $0.setRelationship(ids[0], "shelf", .toOne(store.id("Shelf", 1))) },
                    .notFound
                ),
                (
                    "target of the wrong entity", changes { $0.setRelationship(ids[0], "shelf", .toOne(ids[2])) },
                    .typeMismatch
                ),
                (
                    "unknown entity of a target",
                    changes { $0.setRelationship(ids[0], "shelf", .toOne(store.id("Nope", 1))) }, .unknownEntity
                ),
            ]
            for (name, changes, code) in cases {
                #expect(await modelError { try await store.save(changes) }?.code == code, "\(name)")
                #expect(try await store.dump() == before, "\(name)")
            }
            var stale = changes { _ in }
            stale.update(ids[0], expectedVersion: 7)
            await #expect(throws: SaveConflicts.self) { try await store.save(stale) }
            #expect(try await store.dump() == before)

            let valid = try await store.save(changes { _ in })
            #expect(valid.result.token == HistoryToken(2))
            #expect(valid.result.remappedIdentifiers.values.map(\.primaryKey) == [7])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func closedStoresRefuseEveryCall(_ kind: BackendKind) async throws {
        let store = try await TestStore.open(kind, schema: Catalog.schema)
        try await Datasets.items(store)
        await store.close()
        let backend = store.backend
        let calls: [(String, () async throws -> Void)] = [
            ("schema", { _ = try await backend.schema() }),
            ("apply", { try await backend.apply(schema: Catalog.schema) }),
            ("fetch", { _ = try await backend.fetch(FetchDescriptor(entityName: "Item")) }),
            (
                "aggregate",
                {
                    _ = try await backend.aggregate(
                        AggregateDescriptor(entityName: "Item", aggregations: [Aggregation("n", .count)]))
                }
            ),
            ("snapshots", { _ = try await backend.snapshots(for: [store.id("Item", 1)]) }),
            ("save", { _ = try await backend.save(ChangeSet(deletes: [DeletedObject(id: store.id("Item", 1))])) }),
            ("history", { _ = try await backend.history(after: nil, limit: nil) }),
            ("token", { _ = try await backend.currentHistoryToken() }),
            ("deleteHistory", { try await backend.deleteHistory(before: HistoryToken(1)) }),
        ]
        for (name, call) in calls {
            #expect(await modelError(call)?.code == .closed, "\(name)")
        }
        await backend.close()
    }
}
