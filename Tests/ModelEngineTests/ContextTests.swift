import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import Testing

/// A context's unit of work: temporary identifiers, fetches that include pending changes,
/// rollback, inverse maintenance, identifier remapping.
@Suite struct ContextTests {
    @Test(arguments: BackendKind.allCases)
    func fetchesSeeTheContextsOwnPendingChanges(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let setup = store.context()
            var ids: [PersistentIdentifier] = []
            for (title, rank) in [("apple", 1), ("banana", 2), ("cherry", 3)] {
                ids.append(
                    try await setup.insert("Item", attributes: ["title": .string(title), "rank": .int(Int64(rank))]))
            }
            let saved = try await setup.save().remappedIdentifiers
            let apple = try #require(saved[ids[0]]), banana = try #require(saved[ids[1]])

            let context = store.context()
            let date = try await context.insert("Item", attributes: ["title": .string("date"), "rank": .int(2)])
            try await context.update(apple, attributes: ["rank": .int(2)])
            try await context.delete(banana)
            #expect(await context.hasChanges)

            let rankTwo = FetchDescriptor(
                entityName: "Item", predicate: .equal("rank", .int(2)), sortBy: [SortDescriptor("title")])
            let pending = try await context.fetch(rankTwo)
            // The insert matches with its temporary identifier, the update matches by its new
            // value, the deleted object is gone.
            #expect(pending.objects.map { $0["title"] } == [.string("apple"), .string("date")])
            #expect(pending.objects.map(\.id) == [apple, date])
            #expect(try await context.count(FetchDescriptor(entityName: "Item")) == 3)

            // Another context sees none of it.
            let other = store.context()
            #expect(try await other.fetch(rankTwo).objects.map { $0["title"] } == [.string("banana")])

            await context.rollback()
            #expect(await !context.hasChanges)
            #expect(try await context.fetch(rankTwo).objects.map { $0["title"] } == [.string("banana")])
        }
    }

    /// Objects by identifier are what the context's fetches see: others' saves (a deletion
    /// included), the context's own unsaved changes with their delete rules, and the version a
    /// save would give them.
    @Test(arguments: BackendKind.allCases)
    func objectsByIdentifierAreWhatFetchesSee(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let setup = store.context()
            let a = try await setup.insert("Item", attributes: ["title": .string("a"), "rank": .int(1)])
            let b = try await setup.insert("Item", attributes: ["title": .string("b"), "rank": .int(1)])
            let person = try await setup.insert("Person", attributes: ["name": .string("p")])
            let passport = try await setup.insert(
                "Passport", attributes: ["number": .string("n")], relationships: ["holder": .toOne(person)])
            let saved = try await setup.save().remappedIdentifiers
            let (itemA, itemB) = (try #require(saved[a]), try #require(saved[b]))
            let (holder, document) = (try #require(saved[person]), try #require(saved[passport]))

            let context = store.context()
            #expect(try await context.objects(for: [itemA, itemB]).count == 2)
            func fetched(_ id: PersistentIdentifier) async throws -> ObjectSnapshot? {
                let all = try await context.fetch(FetchDescriptor(entityName: id.entityName)).objects
                return all.first { $0.id == id }
            }

            // Another context's save: a change and a deletion, seen at once.
            let other = store.context()
            try await other.update(itemA, attributes: ["rank": .int(7)])
            try await other.delete(itemB)
            _ = try await other.save()
            let now = try await context.objects(for: [itemA, itemB])
            #expect(now.map(\.id) == [itemA] && now.first?["rank"] == .int(7) && now.first?.version == 2)

            // The context's own change, over another's later save: the store's values with the
            // change applied, at the version the save would give, as a fetch shows it.
            try await context.update(itemA, attributes: ["title": .string("x")])
            try await other.update(itemA, attributes: ["rank": .int(8)])
            _ = try await other.save()
            let changed = try #require(try await context.objects(for: [itemA]).first)
            #expect(changed["title"] == .string("x") && changed["rank"] == .int(8) && changed.version == 4)
            #expect(try await fetched(itemA) == changed)

            // A staged delete, and what its rule deletes with it, are gone; an unsaved insert
            // is there, as a fetch shows it.
            try await context.delete(holder)
            let inserted = try await context.insert("Item", attributes: ["title": .string("new"), "rank": .int(1)])
            #expect(try await context.objects(for: [holder, document]).isEmpty)
            let new = try #require(try await context.objects(for: [inserted]).first)
            #expect(try await fetched(inserted) == new)
        }
    }

    /// Objects removed from a to-many relationship need not exist: removing one that is gone
    /// (or never was) changes nothing, where adding one is `notFound`.
    @Test(arguments: BackendKind.allCases)
    func removingAnObjectThatIsGoneChangesNothing(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let setup = store.context()
            let author = try await setup.insert("Author", attributes: ["name": .string("a")])
            let book = try await setup.insert(
                "Book", attributes: ["title": .string("b")], relationships: ["authors": .toMany([author])])
            let ids = try await setup.save().remappedIdentifiers
            let (writer, written) = (try #require(ids[author]), try #require(ids[book]))
            let gone = PersistentIdentifier(
                storeIdentifier: writer.storeIdentifier, entityName: "Book", key: .permanent(999))

            let context = store.context()
            try await context.remove([gone], from: "books", of: writer)
            #expect(await !context.hasChanges)
            let error = await modelError { try await context.add([gone], to: "books", of: writer) }
            #expect(error?.code == .notFound)
            try await context.save()
            let now = try #require(try await store.context().object(for: writer))
            #expect(now.relationships["books"] == .toMany([written]))
        }
    }

    /// Infinities are doubles like any other: kept, not turned into nil; NaN is refused.
    @Test(arguments: BackendKind.allCases)
    func infinitiesAreKeptAndNaNIsRefused(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let up = try await context.insert(
                "Item", attributes: ["title": .string("up"), "price": .double(.infinity)])
            let down = try await context.insert(
                "Item", attributes: ["title": .string("down"), "price": .double(-.infinity)])
            let error = await modelError {
                _ = try await context.insert("Item", attributes: ["title": .string("nan"), "price": .double(.nan)])
            }
            #expect(error?.code == .typeMismatch && error?.context["attribute"] == "price")
            let ids = try await context.save().remappedIdentifiers
            let fresh = store.context()
            #expect(try await fresh.object(for: try #require(ids[up]))?["price"] == .double(.infinity))
            #expect(try await fresh.object(for: try #require(ids[down]))?["price"] == .double(-.infinity))
            #expect(try await fresh.count(FetchDescriptor(entityName: "Item")) == 2)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func relationshipsBetweenNewObjectsAreRemappedBySave(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let author = try await context.insert("Author", attributes: ["name": .string("Ann")])
            let book = try await context.insert(
                "Book", attributes: ["title": .string("Notes")],
                relationships: ["authors": .toMany([author])])
            #expect(try await context.object(for: author)?.toMany("books") == [book])
            let result = try await context.save()
            let authorID = try #require(result.remappedIdentifiers[author])
            let bookID = try #require(result.remappedIdentifiers[book])
            #expect(!authorID.isTemporary && !bookID.isTemporary)
            #expect(result.token != nil)

            let fresh = store.context()
            #expect(try await fresh.object(for: authorID)?.toMany("books") == [bookID])
            #expect(try await fresh.object(for: bookID)?.toMany("authors") == [authorID])
            // The old temporary identifier means nothing to another context.
            let error = await modelError { _ = try await fresh.object(for: book) }
            #expect(error?.code == .notFound)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func settingAOneToOneTakesItFromItsFormerHolder(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let ann = try await context.insert("Person", attributes: ["name": .string("Ann")])
            let bob = try await context.insert("Person", attributes: ["name": .string("Bob")])
            let passport = try await context.insert(
                "Passport", attributes: ["number": .string("X1")],
                relationships: ["holder": .toOne(ann)])
            let ids = try await context.save().remappedIdentifiers
            let annID = try #require(ids[ann]), bobID = try #require(ids[bob]), passportID = try #require(ids[passport])

            let next = store.context()
            try await next.update(bobID, relationships: ["passport": .toOne(passportID)])
            try await next.save()
            let check = store.context()
            #expect(try await check.object(for: passportID)?.toOne("holder") == bobID)
            #expect(try await check.object(for: bobID)?.toOne("passport") == passportID)
            #expect(try await check.object(for: annID)?.toOne("passport") == nil)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func movingAnItemBetweenShelvesUpdatesBothSides(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let a = try await context.insert("Shelf", attributes: ["name": .string("A")])
            let b = try await context.insert("Shelf", attributes: ["name": .string("B")])
            let item = try await context.insert(
                "Item", attributes: ["title": .string("lamp")], relationships: ["shelf": .toOne(a)])
            let ids = try await context.save().remappedIdentifiers
            let aID = try #require(ids[a]), bID = try #require(ids[b]), itemID = try #require(ids[item])

            let mover = store.context()
            try await mover.add([itemID], to: "items", of: bID)
            #expect(try await mover.object(for: aID)?.toMany("items") == [])
            #expect(try await mover.object(for: itemID)?.toOne("shelf") == bID)
            try await mover.save()

            let check = store.context()
            #expect(try await check.object(for: aID)?.toMany("items") == [])
            #expect(try await check.object(for: bID)?.toMany("items") == [itemID])
            try await check.remove([itemID], from: "items", of: bID)
            try await check.save()
            #expect(try await store.context().object(for: itemID)?.toOne("shelf") == nil)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func historyRecordsEverySaveWithItsAuthor(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let start = try await store.container.currentHistoryToken()
            let context = store.context(author: "importer")
            let item = try await context.insert("Item", attributes: ["title": .string("a")])
            let id = try #require(try await context.save().remappedIdentifiers[item])
            try await context.update(id, attributes: ["title": .string("b"), "rank": .int(3)])
            try await context.save()
            try await context.update(id, attributes: ["rank": .int(3)]) // no real change
            let empty = try await context.save()
            #expect(empty.token == nil)
            try await context.delete(id)
            try await context.save()

            let history = try await store.container.history(after: start)
            #expect(history.map(\.changes.first?.kind) == [.insert, .update, .delete])
            #expect(history.allSatisfy { $0.author == "importer" })
            let tokens = history.map(\.token.rawValue)
            #expect(tokens == Array((tokens.first ?? 0)..<((tokens.first ?? 0) + 3)))
            #expect(history[1].changes.first?.changedProperties == ["rank", "title"])
            #expect(history.allSatisfy { $0.changes.allSatisfy { $0.id == id } })
            #expect(try await store.container.history(after: history[1].token).map(\.token) == [history[2].token])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func everyAttributeTypeRoundTripsThroughAContext(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let values: [String: Value] = [
                "title": .string("Ünïcödé ✓ \"quoted\" '); DROP TABLE \"Item\"; --"),
                "rank": .int(Int64.min),
                "sku": .string("SKU-1"),
                "count": .int(Int64.max),
                "price": .double(0.1 + 0.2),
                "inStock": .bool(true),
                "added": .date(Timestamp(microsecondsSince1970: 1_767_225_600_123_456)),
                "blob": .data(Data([0, 1, 2, 255, 0])),
                "code": .uuid(UUID()),
                "link": .url(URL(string: "https://example.com/a?b=c#d")!), // a literal URL always parses
                // a literal decimal always parses
                "amount": .decimal(Decimal(string: "12345678901234567890.123456789")!),
                "meta": .json(#"{"tags":["a","b"],"n":1.5}"#),
            ]
            let context = store.context()
            let temp = try await context.insert("Item", attributes: values)
            let id = try #require(try await context.save().remappedIdentifiers[temp])
            let read = try #require(try await store.context().object(for: id))
            for (name, value) in values {
                #expect(read[name] == value, "\(name)")
            }
            #expect(read["label"] == .null)
        }
    }

    /// A context made for one save (`retainsSavedObjects: false`, as the daemon makes for Apply)
    /// keeps nothing of what it saved, yet works on: a later update of a saved object reads it
    /// from the store and bumps its version.
    @Test(arguments: BackendKind.allCases)
    func aContextMadeForOneSaveWorksOn(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let once = store.container.makeContext(retainsSavedObjects: false)
            let temporary = try await once.apply(
                (0..<300).map {
                    .insert(
                        entity: "Item", attributes: ["title": .string("t\($0)"), "rank": .int(Int64($0))],
                        relationships: [:], id: nil)
                })
            let saved = try await once.save()
            let pending = await once.hasChanges
            #expect(saved.remappedIdentifiers.count == 300 && !pending)
            let first = try #require(saved.remappedIdentifiers[temporary[0]])
            try await once.update(first, attributes: ["rank": .int(1_000)])
            try await once.save()
            let read = try #require(try await store.context().object(for: first))
            #expect(read["rank"] == .int(1_000) && read["title"] == .string("t0") && read.version == 2)
            #expect(
                try await store.context().fetch(FetchDescriptor(entityName: "Item", resultType: .count)).count == 300)
        }
    }
}
