import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Sorting, offset and limit, result types, `propertiesToFetch` and prefetching.
@Suite struct SortAndResultTests {
    /// Sort keys (text form) and the titles of ``Datasets/items(_:)`` in the order they give.
    static let sorts: [([String], [String])] = [
        (["title"], ["Apple", "Banana", "Crème brûlée", "Zebra*?", "apricot", "creme brulee"]),
        (["-title"], ["creme brulee", "apricot", "Zebra*?", "Crème brûlée", "Banana", "Apple"]),
        (["title:c"], ["Apple", "apricot", "Banana", "creme brulee", "Crème brûlée", "Zebra*?"]),
        (["label"], ["Banana", "apricot", "Crème brûlée", "creme brulee", "Apple", "Zebra*?"]),
        (["-label"], ["Zebra*?", "Apple", "Crème brûlée", "creme brulee", "apricot", "Banana"]),
        (["label:c"], ["Banana", "Crème brûlée", "creme brulee", "Apple", "apricot", "Zebra*?"]),
        (["-label:c"], ["Zebra*?", "Apple", "apricot", "Crème brûlée", "creme brulee", "Banana"]),
        (["label:c", "-title"], ["Banana", "creme brulee", "Crème brûlée", "apricot", "Apple", "Zebra*?"]),
        (["rank", "-price"], ["Banana", "Zebra*?", "Apple", "apricot", "creme brulee", "Crème brûlée"]),
        (["rank"], ["Banana", "Apple", "Zebra*?", "apricot", "Crème brûlée", "creme brulee"]),
        (["-rank"], ["Crème brûlée", "creme brulee", "apricot", "Apple", "Zebra*?", "Banana"]),
        (["price"], ["apricot", "Banana", "Apple", "Crème brûlée", "creme brulee", "Zebra*?"]),
        (["-price"], ["Zebra*?", "creme brulee", "Crème brûlée", "Apple", "Banana", "apricot"]),
        (["added"], ["Banana", "creme brulee", "Crème brûlée", "Apple", "apricot", "Zebra*?"]),
        (["amount"], ["Banana", "creme brulee", "Zebra*?", "apricot", "Apple", "Crème brûlée"]),
        (["inStock", "-title"], ["Zebra*?", "Banana", "creme brulee", "apricot", "Crème brûlée", "Apple"]),
        (["-count", "title"], ["Zebra*?", "Crème brûlée", "Apple", "apricot", "creme brulee", "Banana"]),
    ]

    @Test(arguments: BackendKind.allCases)
    func sortKeysDirectionsCaseAndNil(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            for (keys, expected) in Self.sorts {
                #expect(try await store.values("Item", key: "title", sort: keys) == expected, "\(keys)")
            }
        }
    }

    @Test(arguments: BackendKind.allCases)
    func sortThroughToOneRelationships(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            _ = try await Datasets.articles(store)
            #expect(
                try await store.values("Article", key: "name", sort: ["category.name", "name"])
                    == ["Orphan", "Pasta", "Pizza", "Rust", "Swift"])
            #expect(
                try await store.values("Article", key: "name", sort: ["-category.name", "-name"])
                    == ["Swift", "Rust", "Pizza", "Pasta", "Orphan"])
            #expect(
                try await store.values("Article", key: "name", sort: ["collection.name"])
                    == ["Orphan", "Pasta", "Swift", "Rust", "Pizza"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func offsetThenLimitAfterSorting(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            func titles(_ offset: Int, _ limit: Int?, sort: [String] = ["title"]) async throws -> [String] {
                try await store.fetch("Item", sort: sort, offset: offset, limit: limit).map {
                    $0["title"].textForm ?? "nil"
                }
            }
            #expect(try await titles(1, 2) == ["Banana", "Crème brûlée"])
            #expect(try await titles(5, nil) == ["creme brulee"])
            #expect(try await titles(6, nil) == [])
            #expect(try await titles(10, 3) == [])
            #expect(try await titles(0, 0) == [])
            #expect(try await titles(4, 100) == ["apricot", "creme brulee"])
            #expect(try await titles(0, Int.max) == Self.sorts[0].1)
            #expect(try await titles(2, 2, sort: []) == ["Banana", "Crème brûlée"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func resultTypes(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            let predicate = try PredicateParser.parse("price > 1")
            func fetch(_ type: FetchDescriptor.ResultType, offset: Int = 0, limit: Int? = nil) async throws
                -> FetchResult
            {
                try await store.backend.fetch(
                    FetchDescriptor(
                        entityName: "Item", predicate: predicate, sortBy: [SortDescriptor("title")],
                        offset: offset, limit: limit, resultType: type))
            }
            #expect(try await fetch(.count) == .count(4))
            #expect(try await fetch(.count, limit: 2) == .count(2))
            #expect(try await fetch(.count, offset: 3) == .count(1))
            #expect(try await fetch(.identifiers) == .identifiers([ids[0], ids[3], ids[5], ids[4]]))
            let objects = try await fetch(.objects, offset: 1, limit: 2)
            #expect(objects.identifiers == [ids[3], ids[5]])
            guard case .objects(let snapshots, let prefetched) = objects else {
                Issue.record("not objects: \(objects)"); return
            }
            #expect(prefetched.isEmpty)
            #expect(snapshots.map(\.version) == [1, 1])
            #expect(
                Set(snapshots[0].attributes.keys)
                    == Set(Catalog.schema.entity(named: "Item")?.attributes.map(\.name) ?? []))
            #expect(snapshots[0]["sku"] == .string("C-1"))
            #expect(snapshots[0]["blob"] == .null)
            #expect(snapshots[0].relationships == ["shelf": .toOne(nil)])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func propertiesToFetchRestrictSnapshots(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            var descriptor = FetchDescriptor(entityName: "Item", propertiesToFetch: ["title", "shelf"])
            let first = try #require(try await store.backend.fetch(descriptor).objects.first)
            #expect(first.attributes == ["title": .string("Apple")])
            #expect(first.relationships == ["shelf": .toOne(nil)])
            #expect(first.version == 1)
            descriptor.propertiesToFetch = []
            let bare = try #require(try await store.backend.fetch(descriptor).objects.first)
            #expect(bare.attributes.isEmpty && bare.relationships.isEmpty)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func prefetchingReturnsRelatedObjectsOnce(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            let a = try await Datasets.articles(store)
            var descriptor = FetchDescriptor(
                entityName: "Article", predicate: try PredicateParser.parse("category.name == \"food\""),
                propertiesToFetch: ["name"],
                relationshipKeyPathsForPrefetching: ["category", "collection.articles", "collection"])
            guard case .objects(let objects, let prefetched) = try await store.backend.fetch(descriptor) else {
                Issue.record("not objects"); return
            }
            #expect(objects.map(\.id) == [a.pasta, a.pizza])
            #expect(prefetched.map(\.id) == [a.food, a.swift, a.rust, a.pasta, a.pizza, a.mixed, a.foodCollection])
            // Prefetched snapshots are whole, whatever propertiesToFetch says.
            #expect(prefetched.first?.toMany("articles") == [a.pasta, a.pizza])
            #expect(prefetched.first?["name"] == .string("food"))

            descriptor.relationshipKeyPathsForPrefetching = ["collection", "category.articles.collection"]
            #expect(
                try await store.backend.fetch(descriptor)
                    == .objects(
                        objects,
                        prefetched: [
                            try await store.snapshot(a.mixed), try await store.snapshot(a.foodCollection),
                        ]))
            descriptor.predicate = try PredicateParser.parse("name == \"Orphan\"")
            descriptor.relationshipKeyPathsForPrefetching = ["category", "collection.articles"]
            guard case .objects(_, let none) = try await store.backend.fetch(descriptor) else {
                Issue.record("not objects"); return
            }
            #expect(none.isEmpty)
        }
    }
}
