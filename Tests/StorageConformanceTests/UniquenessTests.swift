import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Unique constraints: the error and what it names, nil parts, upserts (also of two inserts of
/// one change set), the state a change set leaves, whole hierarchies.
@Suite struct UniquenessTests {
    @Test(arguments: BackendKind.allCases)
    func collisionsFailNamingEntityAttributesValuesAndTheExistingObject(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            let before = try await store.dump()
            var c = store.changes()
            c.insert("Item", ["title": .string("fine")])
            c.insert("Item", ["title": .string("copy"), "sku": .string("A-1")])
            let error = try #require(await modelError { try await store.save(c) })
            #expect(error.code == .uniqueConstraint)
            #expect(error.context["entity"] == "Item")
            #expect(error.context["attributes"] == "sku")
            #expect(error.context["values"]?.contains("A-1") == true)
            #expect(error.context["uri"] == ids[0].uriRepresentation)
            #expect(error.message.contains(ids[0].uriRepresentation))
            #expect(try await store.dump() == before)

            for policy in UniquenessPolicy.allCases {
                var u = store.changes(policy: policy)
                u.update(ids[1], ["sku": .string("A-1")])
                let updateError = await modelError { try await store.save(u) }
                #expect(updateError?.code == .uniqueConstraint, "\(policy)")
                #expect(updateError?.context["uri"] == ids[0].uriRepresentation)
            }
            #expect(try await store.dump() == before)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func nilPartsNeverConflictAndValuesCompareByBytes(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            var c = store.changes()
            c.insert("Item", ["title": .string("no sku 1")])
            c.insert("Item", ["title": .string("no sku 2"), "sku": .null])
            c.insert("Item", ["title": .string("lower case"), "sku": .string("a-1")])
            c.insert("Item", ["title": .string("decomposed"), "sku": .string("e\u{301}")])
            c.insert("Item", ["title": .string("composed"), "sku": .string("\u{e9}")])
            try await store.save(c)
            #expect(try await store.values("Item", "sku == nil", key: "title") == ["Banana", "no sku 1", "no sku 2"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func upsertTurnsACollidingInsertIntoAnUpdate(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            let before = try await store.snapshot(ids[0])
            var c = store.changes(author: "importer", policy: .upsert)
            let shelf = c.insert("Shelf", ["name": .string("S")])
            let item = c.insert("Item", ["title": .string("Apple (new)"), "sku": .string("A-1"), "count": .null])
            c.link(item, "shelf", shelf)
            let fresh = c.insert("Item", ["title": .string("Fresh"), "sku": .string("F-1")])
            let saved = try await store.save(c)
            #expect(saved[item] == ids[0])
            #expect(saved[fresh] == store.id("Item", 7))
            #expect(saved.result.versions[ids[0]] == 2)
            var expected = before
            expected.version = 2
            expected.attributes["title"] = .string("Apple (new)")
            expected.attributes["count"] = .null
            expected.relationships["shelf"] = .toOne(saved[shelf])
            #expect(try await store.snapshot(ids[0]) == expected)
            #expect(try await store.snapshot(saved[shelf]).toMany("items") == [ids[0]])
            #expect(try await store.fetch("Item").count == 7)

            let transaction = try #require(try await store.backend.history(after: HistoryToken(1), limit: nil).first)
            #expect(transaction.author == "importer")
            #expect(
                transaction.changes == [
                    HistoryChange(kind: .insert, id: saved[shelf]),
                    HistoryChange(kind: .insert, id: saved[fresh]),
                    // The sku it matched on was given again, unchanged: history does not name it.
                    HistoryChange(kind: .update, id: ids[0], changedProperties: ["count", "shelf", "title"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func twoCollidingInsertsInOneChangeSet(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let first = c.insert("Item", ["title": .string("first"), "sku": .string("S"), "price": .double(1)])
            let second = c.insert("Item", ["title": .string("second"), "sku": .string("S")])
            let error = try #require(await modelError { try await store.save(c) })
            #expect(error.code == .uniqueConstraint)
            #expect(error.context["uri"] == first.uriRepresentation)
            #expect(try await store.dump() == StoreDump(objects: [], history: [], token: nil))

            var u = store.changes(policy: .upsert)
            u.set = ChangeSet(inserts: c.set.inserts, uniquenessPolicy: .upsert)
            let saved = try await store.save(u)
            #expect(saved[first] == store.id("Item", 1) && saved[second] == store.id("Item", 1))
            #expect(saved.result.versions == [store.id("Item", 1): 1])
            let objects = try await store.fetch("Item")
            #expect(objects.count == 1)
            #expect(objects.first?["title"] == .string("second"))
            #expect(objects.first?["price"] == .double(1))
            #expect(objects.first?.version == 1)
            #expect(
                try await store.backend.history(after: nil, limit: nil).map(\.changes)
                    == [[HistoryChange(kind: .insert, id: store.id("Item", 1))]])
        }
    }

    /// Collisions are judged on the state the change set leaves.
    @Test(arguments: BackendKind.allCases)
    func deletedAndChangedValuesAreFree(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            var c = store.changes()
            c.delete(ids[0])
            let replacement = c.insert("Item", ["title": .string("Apple again"), "sku": .string("A-1")])
            c.update(ids[3], ["sku": .string("X-1")])
            c.update(ids[4], ["sku": .string("C-1")])
            let saved = try await store.save(c)
            #expect(
                try await store.values("Item", "sku IN {\"A-1\", \"C-1\", \"X-1\"}", key: "title")
                    == ["Crème brûlée", "creme brulee", "Apple again"])
            #expect(saved[replacement] == store.id("Item", 7))

            var swap = store.changes()
            swap.update(ids[3], ["sku": .string("C-1")])
            swap.update(ids[4], ["sku": .string("X-1")])
            try await store.save(swap)
            #expect(
                try await store.values("Item", "sku IN {\"C-1\", \"X-1\"}", key: "title", sort: ["sku"])
                    == ["Crème brûlée", "creme brulee"])

            var clash = store.changes(policy: .upsert)
            clash.update(ids[1], ["sku": .string("Y-1")])
            clash.update(ids[2], ["sku": .string("Y-1")])
            let error = await modelError { try await store.save(clash) }
            #expect(error?.code == .uniqueConstraint)
            #expect(error?.context["uri"] == ids[1].uriRepresentation)
        }
    }

    /// A constraint holds over the whole hierarchy: a PersonalTrip collides with a BusinessTrip.
    @Test(arguments: BackendKind.allCases)
    func constraintsSpanTheHierarchy(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Datasets.trips(store)
            var c = store.changes()
            c.insert(
                "PersonalTrip",
                [
                    "name": .string("Berlin"), "destination": .string("elsewhere"),
                    "startDate": date("2026-02-01"), "endDate": date("2026-02-03"),
                ])
            let error = try #require(await modelError { try await store.save(c) })
            #expect(error.code == .uniqueConstraint)
            #expect(error.context["uri"] == ids[2].uriRepresentation)
            #expect(error.context["attributes"] == "name, startDate, endDate")

            var moved = store.changes()
            moved.insert(
                "PersonalTrip",
                [
                    "name": .string("Berlin"), "destination": .string("elsewhere"),
                    "startDate": date("2026-02-01"), "endDate": date("2026-02-04"),
                ])
            try await store.save(moved)
            #expect(
                try await store.values("Trip", "name == \"Berlin\"", key: "destination") == ["Berlin", "elsewhere"])
        }
    }
}
