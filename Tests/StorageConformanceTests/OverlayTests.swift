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

    /// An object the overlay inserts has its to-many relationships as a stored one has: those a
    /// join table keeps and those the other side's foreign key holds, in its snapshot and when
    /// prefetched through it (PostgreSQL's reads once left them out).
    @Test(arguments: BackendKind.allCases)
    func insertedObjectsHaveTheirToManyRelationships(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var stored = store.changes()
            let ada = stored.insert("Author", ["name": .string("Ada")])
            let notes = stored.insert("Book", ["title": .string("Notes")])
            stored.link(notes, "authors", ada)
            let oak = stored.insert("Shelf", ["name": .string("Oak")])
            let saved = try await store.save(stored)

            var pending = store.changes()
            let bob = pending.insert("Author", ["name": .string("Bob")])
            pending.link(bob, "books", saved[notes])
            let city = pending.insert("Library", ["name": .string("City")])
            pending.link(saved[oak], "library", city)

            let authors = try await store.fetch("Author", sort: ["name"], overlay: pending)
            #expect(authors.map(\.id) == [saved[ada], bob])
            #expect(authors.last?.toMany("books") == [saved[notes]])
            let book = try #require(try await store.fetch("Book", overlay: pending).first)
            #expect(Set(book.toMany("authors")) == [saved[ada], bob])
            let library = try #require(try await store.fetch("Library", overlay: pending).first)
            #expect(library.id == city)
            #expect(library.toMany("shelves") == [saved[oak]])

            let prefetch = FetchDescriptor(
                entityName: "Author", predicate: try PredicateParser.parse("name == \"Bob\""),
                relationshipKeyPathsForPrefetching: ["books"])
            guard case .objects(_, let prefetched) = try await store.backend.fetch(prefetch, overlay: pending.set)
            else {
                Issue.record("not objects"); return
            }
            #expect(prefetched.map(\.id) == [saved[notes]])
        }
    }

    /// Thousands of inserted objects, more than one of PostgreSQL's overlay statements holds,
    /// every one seen with its values (rows of different columns among them).
    @Test(arguments: BackendKind.allCases)
    func manyInsertedObjectsAreAllSeen(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            _ = try await Datasets.items(store)
            var pending = store.changes()
            for n in 0..<4_000 {
                var values: [String: Value] = ["title": .string("new \(n)"), "count": .int(Int64(n))]
                if n.isMultiple(of: 3) { values["label"] = .string("third") }
                pending.insert("Item", values)
            }
            #expect(
                try await store.backend.fetch(
                    FetchDescriptor(entityName: "Item", resultType: .count), overlay: pending.set)
                    == .count(4_006))
            #expect(
                try await store.values(
                    "Item", "count >= 3995 AND title BEGINSWITH \"new\"", key: "title", sort: ["count"],
                    overlay: pending)
                    == (3_995..<4_000).map { "new \($0)" })
            #expect(
                try await store.values("Item", "label == \"third\"", key: "count", sort: ["-count"], overlay: pending)
                    .first == "3999")
            #expect(try await store.fetch("Item").count == 6)
        }
    }

    /// Hundreds of updated and deleted objects (PostgreSQL copies and hides them a statement a
    /// hierarchy, and indexes the copies), each seen as staged, with links in and out.
    @Test(arguments: BackendKind.allCases)
    func manyUpdatedAndDeletedObjectsAreAllSeen(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var stored = store.changes()
            let items = (0..<400).map {
                stored.insert("Item", ["title": .string("item \($0)"), "count": .int(Int64($0))])
            }
            let authors = (0..<3).map { stored.insert("Author", ["name": .string("author \($0)")]) }
            let books = (0..<100).map { n in
                let book = stored.insert("Book", ["title": .string("book \(n)")])
                stored.link(book, "authors", authors[0])
                return book
            }
            let saved = try await store.save(stored)
            var pending = store.changes()
            for (n, item) in items.enumerated() {
                if n.isMultiple(of: 2) {
                    pending.update(saved[item], ["count": .int(Int64(n + 1_000))])
                } else if n.isMultiple(of: 3) {
                    pending.delete(saved[item])
                }
            }
            for book in books {
                pending.link(saved[book], "authors", saved[authors[1]])
                pending.unlink(saved[book], "authors", saved[authors[0]])
            }
            let deleted = (0..<400).filter { !$0.isMultiple(of: 2) && $0.isMultiple(of: 3) }.count
            #expect(
                try await store.backend.fetch(
                    FetchDescriptor(entityName: "Item", resultType: .count), overlay: pending.set)
                    == .count(400 - deleted))
            #expect(
                try await store.values("Item", "count >= 1000", key: "title", sort: ["count"], overlay: pending)
                    == stride(from: 0, to: 400, by: 2).map { "item \($0)" })
            #expect(try await store.values("Item", "count == 3", key: "title", overlay: pending).isEmpty)
            #expect(try await store.values("Item", "count == 5", key: "title", overlay: pending) == ["item 5"])
            let second = try #require(try await store.fetch("Author", "name == \"author 1\"", overlay: pending).first)
            #expect(Set(second.toMany("books")) == Set(books.map { saved[$0] }))
            let first = try #require(try await store.fetch("Author", "name == \"author 0\"", overlay: pending).first)
            #expect(first.toMany("books").isEmpty)
            #expect(try await store.fetch("Item", "count >= 1000").isEmpty, "nothing was saved")
        }
    }

    /// After a migration adds an attribute (a column SQLite puts last in its table, wherever the
    /// layout lists it), an overlay's values of it and of the others are read as staged.
    @Test(arguments: BackendKind.allCases)
    func overlaysAfterAMigrationReadWhatTheyStage(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await MigrationTests.load(store)
            _ = try await store.backend.migrate(to: StagedMigrationTests.middle, options: MigrationOptions())
            let migrated = try MigrationTests.migrated(store, StagedMigrationTests.middle)
            var pending = migrated.changes()
            pending.update(try #require(ids["Kyoto"]), ["country": .string("Japan"), "destination": .string("Kansai")])
            var oslo = MigrationTests.trip("Oslo", "Norway", "2026-07-01", "2026-07-02")
            oslo["country"] = .string("Norway")
            pending.insert("Trip", oslo)
            #expect(
                try await migrated.values("Trip", key: "country", sort: ["name"], overlay: pending)
                    == ["Japan", "Norway", "nil", "nil"])
            #expect(
                try await migrated.values("Trip", key: "destination", sort: ["name"], overlay: pending)
                    == ["Kansai", "Norway", "France", "Italy"])
            #expect(
                try await migrated.values("Trip", "country != nil", key: "name", overlay: pending) == ["Kyoto", "Oslo"])
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
