import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Key paths through relationships: to-one paths, ANY / ALL / NONE, collection functions,
/// SUBQUERY, object comparisons, dangling references.
@Suite struct RelationshipPredicateTests {
    @Test(arguments: BackendKind.allCases)
    func toOneKeyPaths(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            let a = try await Datasets.articles(store)
            try await expectMatches(
                store, "Article", key: "name",
                [
                    ("category.name == \"tech\"", ["Swift", "Rust"]),
                    ("category.name != \"tech\"", ["Pasta", "Orphan", "Pizza"]),
                    ("NOT (category.name == \"tech\")", ["Pasta", "Orphan", "Pizza"]),
                    ("category.name == nil", ["Orphan"]),
                    ("category == nil", ["Orphan"]),
                    ("category != nil", ["Swift", "Rust", "Pasta", "Pizza"]),
                    ("category.name BEGINSWITH \"f\" AND collection.name == \"Mixed\"", ["Pizza"]),
                    ("category == CAST(\"\(a.tech.uriRepresentation)\", \"object\")", ["Swift", "Rust"]),
                    ("category != CAST(\"\(a.tech.uriRepresentation)\", \"object\")", ["Pasta", "Orphan", "Pizza"]),
                    ("category == \"\(a.food.uriRepresentation)\"", ["Pasta", "Pizza"]),
                    ("self == CAST(\"\(a.pasta.uriRepresentation)\", \"object\")", ["Pasta"]),
                    (
                        "self IN {CAST(\"\(a.pasta.uriRepresentation)\", \"object\"), CAST(\"\(a.swift.uriRepresentation)\", \"object\")}",
                        ["Swift", "Pasta"]
                    ),
                    (
                        "self != CAST(\"\(a.pasta.uriRepresentation)\", \"object\")",
                        ["Swift", "Rust", "Orphan", "Pizza"]
                    ),
                    ("collection.articles.@count == 3", ["Swift", "Rust", "Pizza"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func quantifiersIncludingEmptyCollections(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            let a = try await Datasets.articles(store)
            try await expectMatches(
                store, "ArticleCollection", key: "name",
                [
                    ("ANY articles.category.name == \"tech\"", ["Mixed"]),
                    ("ANY articles.category.name == \"nope\"", []),
                    ("ALL articles.category.name == \"food\"", ["Food", "Empty"]),
                    ("NONE articles.category.name == \"tech\"", ["Food", "Empty"]),
                    ("NOT (ANY articles.category.name == \"tech\")", ["Food", "Empty"]),
                    ("ANY articles.name BEGINSWITH \"P\"", ["Mixed", "Food"]),
                    ("ALL articles.name BEGINSWITH \"P\"", ["Food", "Empty"]),
                    ("ANY articles.name IN {\"Rust\", \"Pasta\"}", ["Mixed", "Food"]),
                    ("ANY articles == CAST(\"\(a.pasta.uriRepresentation)\", \"object\")", ["Food"]),
                    ("NONE articles == CAST(\"\(a.pasta.uriRepresentation)\", \"object\")", ["Mixed", "Empty"]),
                    ("ANY articles.category == CAST(\"\(a.tech.uriRepresentation)\", \"object\")", ["Mixed"]),
                ])
            try await expectMatches(
                store, "Category", key: "name",
                [
                    ("ANY articles.collection.name == \"Mixed\"", ["tech", "food"]),
                    ("ALL articles.collection.name == \"Mixed\"", ["tech", "misc"]),
                    ("ANY articles.collection == nil", []),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func subqueryCountsMatchingRelatedObjects(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            _ = try await Datasets.articles(store)
            try await expectMatches(
                store, "ArticleCollection", key: "name",
                [
                    // SwiftDataKit's example: collections holding an article in category "tech".
                    ("SUBQUERY(articles, $a, $a.category.name == \"tech\").@count > 0", ["Mixed"]),
                    ("SUBQUERY(articles, $a, $a.category.name == \"tech\").@count == 2", ["Mixed"]),
                    ("SUBQUERY(articles, $a, $a.category.name == \"tech\").@count == 0", ["Food", "Empty"]),
                    ("SUBQUERY(articles, $a, NOT ($a.category.name == \"tech\")).@count == 1", ["Mixed", "Food"]),
                    // Key paths without a variable refer to the collection itself.
                    ("SUBQUERY(articles, $a, $a.name BEGINSWITH \"P\" AND name == \"Mixed\").@count == 1", ["Mixed"]),
                    ("SUBQUERY(articles, $a, $a.@entity == \"Article\").@count == 3", ["Mixed"]),
                    ("SUBQUERY(articles, $a, $a == $a).@count == 1", ["Food"]),
                    // Nested: categories of the collection's articles that have more than one article.
                    (
                        "SUBQUERY(articles, $a, SUBQUERY($a.category.articles, $b, $b.name != $a.name).@count > 0).@count == 3",
                        ["Mixed"]
                    ),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func collectionFunctionsIncludingEmpty(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let s1 = c.insert("Shelf", ["name": .string("S1")])
            _ = c.insert("Shelf", ["name": .string("S2")])
            let s3 = c.insert("Shelf", ["name": .string("S3")])
            let items: [(PersistentIdentifier, [String: Value])] = [
                (s1, ["title": .string("i1"), "price": .double(1.5), "count": .int(2), "amount": .decimal(1)]),
                (s1, ["title": .string("i2"), "count": .int(3), "added": date("2026-05-01")]),
                // literal
                (s1, ["title": .string("i3"), "price": .double(2.5), "amount": .decimal(Decimal(string: "0.5")!)]),
                (s3, ["title": .string("i4"), "price": .double(10), "count": .int(7), "added": date("2026-01-01")]),
            ]
            for (shelf, values) in items {
                let item = c.insert("Item", values)
                c.link(item, "shelf", shelf)
            }
            try await store.save(c)
            try await expectMatches(
                store, "Shelf", key: "name",
                [
                    ("items.@count == 3", ["S1"]),
                    ("items.@count == 0", ["S2"]),
                    ("items.@count > 0", ["S1", "S3"]),
                    ("items.@sum.price == 4", ["S1"]),
                    ("items.@sum.price == 0", ["S2"]),
                    ("items.@sum.count == 5", ["S1"]),
                    ("items.@sum.count == 0", ["S2"]),
                    ("items.@sum.amount == 1.5", ["S1"]),
                    ("items.@sum.amount == 0", ["S2", "S3"]),
                    ("items.@avg.price == 2", ["S1"]),
                    ("items.@avg.price == nil", ["S2"]),
                    ("items.@avg.count == 2.5", ["S1"]),
                    ("items.@avg.amount == 0.75", ["S1"]),
                    ("items.@min.price == 1.5", ["S1"]),
                    ("items.@min.price == nil", ["S2"]),
                    ("items.@max.count == 7", ["S3"]),
                    ("items.@max.count == nil", ["S2"]),
                    ("items.@min.title == \"i1\"", ["S1"]),
                    ("items.@max.title == \"i3\"", ["S1"]),
                    ("items.@max.added == \"2026-05-01\"", ["S1"]),
                    ("items.@min.added < \"2026-02-01\"", ["S3"]),
                    ("items.@count * 2 == 6", ["S1"]),
                    ("ANY items.price > 2", ["S1", "S3"]),
                    ("ALL items.price > 2", ["S2", "S3"]),
                    ("NONE items.price > 2", ["S2"]),
                    ("ANY items.price == nil", ["S1"]),
                    ("ALL items.price != nil", ["S2", "S3"]),
                    ("NOT (ALL items.price > 2)", ["S1"]),
                ])
        }
    }

    /// A to-one reference whose target was deleted (noAction): the key is still there, and every
    /// attribute after it is nil.
    @Test(arguments: BackendKind.allCases)
    func danglingReferences(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let ann = c.insert("Person", ["name": .string("Ann")])
            let bob = c.insert("Person", ["name": .string("Bob")])
            let cid = c.insert("Person", ["name": .string("Cid")])
            c.link(ann, "mentor", bob)
            c.link(cid, "mentor", ann)
            let saved = try await store.save(c)
            var d = store.changes()
            d.delete(saved[bob])
            try await store.save(d)
            try await expectMatches(
                store, "Person", key: "name",
                [
                    ("mentor.name == nil", ["Ann"]),
                    ("mentor == nil", []),
                    ("mentor != nil", ["Ann", "Cid"]),
                    ("mentor.name == \"Ann\"", ["Cid"]),
                    ("mentor.mentor.name == nil", ["Ann", "Cid"]),
                    ("mentor == CAST(\"\(saved[bob].uriRepresentation)\", \"object\")", ["Ann"]),
                ])
            let snapshot = try await store.snapshot(saved[ann])
            #expect(snapshot.toOne("mentor") == store.id("Person", saved[bob].primaryKey ?? 0))
        }
    }
}
