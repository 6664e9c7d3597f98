import Foundation
import ModelCore
import ModelFixtures
import SQLiteStorage
import Testing

/// Fetches and aggregates with a context's pending changes: the post-save answer, nothing written.
@Suite struct OverlayTests {
    /// Three saved students (keys 1…3) born 2001, 2002, 2003.
    private func students(_ store: SQLiteStore) async throws -> [PersistentIdentifier] {
        try await store.insert(
            "Student", [2001, 2002, 2003].map { ["name": .string("s\($0)"), "birthOfYear": .int($0)] })
    }

    @Test func insertsUpdatesAndDeletesAnswerAsIfSaved() async throws {
        try await withStore(Articles.schema) { store, _ in
            let ids = try await students(store)
            let added = store.temporary("Student")
            let overlay = ChangeSet(
                inserts: [InsertedObject(id: added, attributes: ["name": .string("new"), "birthOfYear": .int(2002)])],
                updates: [UpdatedObject(id: ids[0], attributes: ["birthOfYear": .int(2002)])],
                deletes: [DeletedObject(id: ids[2])])
            let found = try await store.objects(
                "Student", "birthOfYear == 2002", sort: ["birthOfYear"], overlay: overlay)
            // Ties sort by key: saved objects first, the insert after them (the key it would get).
            #expect(found.map(\.id) == [ids[0], ids[1], added])
            #expect(found.map(\.version) == [2, 1, 1])
            let counts = try await store.aggregate(
                AggregateDescriptor(
                    entityName: "Student", groupBy: ["birthOfYear"],
                    aggregations: [Aggregation("n", .count)]), overlay: overlay)
            #expect(counts == [["birthOfYear": .int(2002), "n": .int(3)]])
            // Nothing was written, and the TEMP tables were emptied.
            #expect(try await store.values("Student", key: "birthOfYear") == ["2001", "2002", "2003"])
            #expect(try await store.currentHistoryToken() == HistoryToken(1))
            let again = try await store.objects(
                "Student", sort: ["name"], overlay: ChangeSet(deletes: [DeletedObject(id: ids[1])]))
            #expect(again.map(\.id) == [ids[0], ids[2]])
        }
    }

    @Test func relationshipsOfInsertedObjectsCarryTemporaryIdentifiers() async throws {
        try await withStore(Articles.schema) { store, _ in
            let category = try await store.insert("Category", [["name": .string("tech")]])[0]
            let article = store.temporary("Article")
            let overlay = ChangeSet(
                inserts: [
                    InsertedObject(
                        id: article, attributes: ["name": .string("Swift")],
                        relationships: ["category": .toOne(category)])
                ],
                updates: [
                    UpdatedObject(id: category, relationships: ["articles": .toMany(added: [article], removed: [])])
                ])
            let categories = try await store.objects("Category", "articles.@count == 1", overlay: overlay)
            #expect(categories.map(\.id) == [category])
            #expect(categories.first?.toMany("articles") == [article])
            let uri = article.uriRepresentation
            let articles = try await store.objects(
                "Article", "self == CAST(\"\(uri)\", \"object\") AND category.name == \"tech\"", overlay: overlay)
            #expect(articles.map(\.id) == [article])
            #expect(articles.first?.toOne("category") == category)
            #expect(try await store.objects("Article").isEmpty)
        }
    }

    @Test func joinTableChangesAndDeletes() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let authors = try await store.insert("Author", [["name": .string("Ann")], ["name": .string("Bob")]])
            let book = store.temporary("Book")
            let saved = try await store.save(
                ChangeSet(
                    inserts: [
                        InsertedObject(
                            id: book, attributes: ["title": .string("B1")],
                            relationships: ["authors": .toMany(added: authors, removed: [])])
                    ],
                    updates: authors.map {
                        UpdatedObject(id: $0, relationships: ["books": .toMany(added: [book], removed: [])])
                    }))
            let bookID = try #require(saved.remappedIdentifiers[book])
            #expect(try await store.values("Book", "ANY authors.name == \"Bob\"", key: "title") == ["B1"])
            let unlink = ChangeSet(updates: [
                UpdatedObject(id: authors[1], relationships: ["books": .toMany(added: [], removed: [bookID])]),
                UpdatedObject(id: bookID, relationships: ["authors": .toMany(added: [], removed: [authors[1]])]),
            ])
            #expect(
                try await store.values("Book", "ANY authors.name == \"Bob\"", key: "title", overlay: unlink).isEmpty)
            #expect(try await store.objects("Book", overlay: unlink).first?.toMany("authors") == [authors[0]])
            let deleteAnn = ChangeSet(deletes: [DeletedObject(id: authors[0])])
            #expect(try await store.objects("Book", overlay: deleteAnn).first?.toMany("authors") == [authors[1]])
            #expect(try await store.objects("Book").first?.toMany("authors") == authors)
        }
    }

    @Test func goneObjectsAreSkippedAndBadValuesFail() async throws {
        try await withStore(Articles.schema) { store, _ in
            let ids = try await students(store)
            let gone = store.id("Student", 99)
            let overlay = ChangeSet(
                updates: [UpdatedObject(id: gone, attributes: ["name": .string("x")])],
                deletes: [DeletedObject(id: store.id("Student", 98))])
            #expect(try await store.objects("Student", overlay: overlay).map(\.id) == ids)
            let bad = ChangeSet(updates: [UpdatedObject(id: ids[0], attributes: ["birthOfYear": .string("soon")])])
            #expect(await modelError { _ = try await store.objects("Student", overlay: bad) }?.code == .typeMismatch)
        }
    }
}
