import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Fetches and aggregates with an overlay (a context's pending changes) answer as if it had
/// been saved, without writing anything.
@Suite struct OverlayTests {
    @Test(arguments: BackendKind.allCases)
    func fetchesSeePendingChanges(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            let before = try await store.dump()
            var pending = store.changes()
            let jam = pending.insert(
                "Item", ["title": .string("Apricot jam"), "label": .string("fruit"), "count": .int(5)])
            let aardvark = pending.insert("Item", ["title": .string("Aardvark"), "count": .int(5)])
            pending.update(ids[1], ["count": .int(50)], expectedVersion: 1)
            pending.delete(ids[2])

            #expect(
                try await store.values("Item", key: "title", overlay: pending)
                    == ["Apple", "apricot", "Crème brûlée", "creme brulee", "Zebra*?", "Apricot jam", "Aardvark"])
            // Inserted objects sort on ties after saved ones, in change-set order.
            let sorted = try await store.fetch("Item", "count >= 5", sort: ["count"], overlay: pending)
            #expect(sorted.map(\.id) == [ids[0], jam, aardvark, ids[3], ids[1], ids[5]])
            #expect(sorted.map(\.version) == [1, 1, 1, 1, 2, 1])
            #expect(sorted[1]["title"] == .string("Apricot jam") && sorted[1]["rank"] == .int(0))
            #expect(
                try await store.values(
                    "Item", "label ==[c] \"fruit\"", key: "title", sort: ["-title"], overlay: pending)
                    == ["apricot", "Apricot jam", "Apple"])
            let identifiers = try await store.backend.fetch(
                FetchDescriptor(
                    entityName: "Item", sortBy: [SortDescriptor("title")], limit: 2, resultType: .identifiers),
                overlay: pending.set)
            #expect(identifiers == .identifiers([aardvark, ids[0]]))
            let count = try await store.backend.fetch(
                FetchDescriptor(entityName: "Item", resultType: .count), overlay: pending.set)
            #expect(count == .count(7))

            #expect(try await store.dump() == before)
            #expect(try await store.fetch("Item").count == 6)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func relationshipsAndPredicatesUseTemporaryIdentifiers(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            let a = try await Datasets.articles(store)
            var pending = store.changes()
            let go = pending.insert("Article", ["name": .string("Go")])
            pending.link(go, "category", a.tech)
            pending.link(go, "collection", a.foodCollection)
            pending.unlink(a.pasta, "collection", a.foodCollection)

            let tech = try #require(try await store.fetch("Category", "name == \"tech\"", overlay: pending).first)
            #expect(tech.toMany("articles") == [a.swift, a.rust, go])
            #expect(tech.version == 2)
            let goSnapshot = try #require(try await store.fetch("Article", "name == \"Go\"", overlay: pending).first)
            #expect(goSnapshot.id == go)
            #expect(goSnapshot.relationships == ["category": .toOne(a.tech), "collection": .toOne(a.foodCollection)])

            try await expectMatches(
                store, "ArticleCollection", key: "name",
                [
                    ("SUBQUERY(articles, $a, $a.category.name == \"tech\").@count > 0", ["Mixed"])
                ])
            #expect(
                try await store.values(
                    "ArticleCollection", "SUBQUERY(articles, $a, $a.category.name == \"tech\").@count > 0",
                    key: "name", overlay: pending) == ["Mixed", "Food"])
            #expect(
                try await store.values(
                    "ArticleCollection", "ANY articles == CAST(\"\(go.uriRepresentation)\", \"object\")",
                    key: "name", overlay: pending) == ["Food"])
            #expect(
                try await store.values(
                    "Article", "self == CAST(\"\(go.uriRepresentation)\", \"object\")",
                    key: "name", overlay: pending) == ["Go"])
            #expect(
                try await store.values("Article", "self == CAST(\"\(go.uriRepresentation)\", \"object\")", key: "name")
                    .isEmpty)

            let rows = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Article", groupBy: ["collection.name"], aggregations: [Aggregation("n", .count)]),
                overlay: pending.set)
            #expect(
                rows == [
                    ["collection.name": .null, "n": .int(2)], ["collection.name": .string("Food"), "n": .int(1)],
                    ["collection.name": .string("Mixed"), "n": .int(3)],
                ])
            let prefetch = FetchDescriptor(
                entityName: "ArticleCollection", predicate: try PredicateParser.parse("name == \"Food\""),
                relationshipKeyPathsForPrefetching: ["articles"])
            guard case .objects(_, let prefetched) = try await store.backend.fetch(prefetch, overlay: pending.set)
            else {
                Issue.record("not objects"); return
            }
            #expect(prefetched.map(\.id) == [go])
        }
    }

    /// An overlay checks neither versions nor uniqueness, and skips what refers to objects that
    /// are gone; bad input still fails.
    @Test(arguments: BackendKind.allCases)
    func overlaysAreLenientAboutStateButNotAboutInput(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            var pending = store.changes()
            pending.update(ids[0], ["label": .string("stale")], expectedVersion: 99)
            let copy = pending.insert("Item", ["title": .string("copy"), "sku": .string("A-1")])
            pending.setRelationship(copy, "shelf", .toOne(store.id("Shelf", 9)))
            pending.update(store.id("Item", 99), ["title": .string("gone")])
            pending.delete(store.id("Item", 98))
            #expect(
                try await store.values("Item", "sku == \"A-1\"", key: "label", overlay: pending) == ["stale", "nil"])

            var unknown = store.changes()
            unknown.insert("Item", ["title": .string("x"), "colour": .string("red")])
            #expect(await modelError { _ = try await store.fetch("Item", overlay: unknown) }?.code == .unknownProperty)
            var mistyped = store.changes()
            mistyped.update(ids[0], ["count": .string("many")])
            #expect(await modelError { _ = try await store.fetch("Item", overlay: mistyped) }?.code == .typeMismatch)
            var foreign = store.changes()
            foreign.delete(PersistentIdentifier(storeIdentifier: UUID(), entityName: "Item", key: .permanent(1)))
            #expect(
                await modelError { _ = try await store.fetch("Item", overlay: foreign) }?.code == .invalidIdentifier)
            #expect(
                await modelError {
                    _ = try await store.backend.aggregate(
                        AggregateDescriptor(entityName: "Item", aggregations: [Aggregation("n", .count)]),
                        overlay: foreign.set)
                }?.code == .invalidIdentifier)
        }
    }
}
