import Foundation
import ModelCore
import ModelFixtures
import Testing

/// How relationships are kept: foreign keys and their derived to-many side, join tables,
/// one-to-one, relationships without inverse; only the stored side of a change counts.
@Suite struct RelationshipStorageTests {
    @Test(arguments: BackendKind.allCases)
    func manyToManyThroughAJoinTable(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let ann = c.insert("Author", ["name": .string("Ann")]), bob = c.insert("Author", ["name": .string("Bob")])
            let b1 = c.insert("Book", ["title": .string("One")]), b2 = c.insert("Book", ["title": .string("Two")])
            c.link(b2, "authors", ann)
            c.link(ann, "books", b1)
            c.link(bob, "books", b1)
            let s = try await store.save(c)
            #expect(try await store.snapshot(s[ann]).toMany("books") == [s[b1], s[b2]])
            #expect(try await store.snapshot(s[bob]).toMany("books") == [s[b1]])
            #expect(try await store.snapshot(s[b1]).toMany("authors") == [s[ann], s[bob]])
            #expect(try await store.values("Book", "ANY authors.name == \"Bob\"", key: "title") == ["One"])
            #expect(try await store.values("Author", "books.@count == 2", key: "name") == ["Ann"])

            var u = store.changes()
            u.unlink(s[ann], "books", s[b1])
            try await store.save(u)
            #expect(try await store.snapshot(s[b1]).toMany("authors") == [s[bob]])
            #expect(try await store.snapshot(s[ann]).toMany("books") == [s[b2]])

            // Deleting an object removes its join-table rows, on both sides.
            var d = store.changes()
            d.delete(s[bob])
            d.delete(s[b2])
            try await store.save(d)
            #expect(try await store.snapshot(s[b1]).toMany("authors") == [])
            #expect(try await store.snapshot(s[ann]).toMany("books") == [])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func oneToOne(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let ann = c.insert("Person", ["name": .string("Ann")]), bob = c.insert("Person", ["name": .string("Bob")])
            let p1 = c.insert("Passport", ["number": .string("P1")])
            c.link(ann, "passport", p1)
            let s = try await store.save(c)
            #expect(try await store.snapshot(s[ann]).toOne("passport") == s[p1])
            #expect(try await store.snapshot(s[p1]).toOne("holder") == s[ann])
            #expect(try await store.snapshot(s[bob]).relationships["passport"] == .toOne(nil))
            #expect(try await store.values("Person", "passport.number == \"P1\"", key: "name") == ["Ann"])
            #expect(try await store.values("Passport", "holder.name == \"Ann\"", key: "number") == ["P1"])

            // The passport changes hands: both old sides are cleared, as the engine sends it.
            var m = store.changes()
            m.unlink(s[ann], "passport", s[p1])
            m.link(s[bob], "passport", s[p1])
            try await store.save(m)
            #expect(try await store.snapshot(s[ann]).toOne("passport") == nil)
            #expect(try await store.snapshot(s[bob]).toOne("passport") == s[p1])

            var d = store.changes()
            d.delete(s[p1])
            d.unlink(s[bob], "passport", s[p1])
            try await store.save(d)
            #expect(try await store.snapshot(s[bob]).toOne("passport") == nil)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func foreignKeysAndTheirDerivedToManySide(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let s1 = c.insert("Shelf", ["name": .string("S1")]), s2 = c.insert("Shelf", ["name": .string("S2")])
            let items = (1...4).map { c.insert("Item", ["title": .string("i\($0)")]) }
            for item in items.reversed() { c.link(item, "shelf", s1) }
            let s = try await store.save(c)
            #expect(try await store.snapshot(s[s1]).toMany("items") == items.map { s[$0] })

            var m = store.changes()
            m.unlink(s[items[1]], "shelf", s[s1])
            m.link(s[items[1]], "shelf", s[s2])
            m.unlink(s[items[3]], "shelf", s[s1])
            try await store.save(m)
            #expect(try await store.snapshot(s[s1]).toMany("items") == [s[items[0]], s[items[2]]])
            #expect(try await store.snapshot(s[s2]).toMany("items") == [s[items[1]]])
            #expect(try await store.snapshot(s[items[3]]).toOne("shelf") == nil)
            #expect(try await store.values("Shelf", "items.@count == 1", key: "name") == ["S2"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func relationshipsWithoutInverse(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let people = ["Ann", "Bob", "Cid"].map { c.insert("Person", ["name": .string($0)]) }
            c.link(people[0], "friends", people[2])
            c.link(people[0], "friends", people[1])
            c.link(people[1], "friends", people[0])
            c.link(people[2], "mentor", people[0])
            let s = try await store.save(c)
            let ids = people.map { s[$0] }
            #expect(try await store.snapshot(ids[0]).toMany("friends") == [ids[1], ids[2]])
            #expect(try await store.snapshot(ids[2]).toOne("mentor") == ids[0])
            #expect(try await store.values("Person", "ANY friends.name == \"Ann\"", key: "name") == ["Bob"])

            var d = store.changes()
            d.delete(ids[1])
            d.delete(ids[0])
            try await store.save(d)
            // The friends' join rows went with Ann and Bob; Cid's mentor key dangles (noAction).
            let cid = try await store.snapshot(ids[2])
            #expect(cid.toMany("friends") == [])
            #expect(cid.toOne("mentor") == store.id("Person", 1))
        }
    }

    /// Backends store the side of each relationship change that is kept, and ignore the other.
    @Test(arguments: BackendKind.allCases)
    func onlyTheStoredSideOfAChangeCounts(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let shelf = c.insert("Shelf", ["name": .string("S")])
            let item = c.insert("Item", ["title": .string("i")])
            let author = c.insert("Author", ["name": .string("A")])
            let book = c.insert("Book", ["title": .string("B")])
            c.setRelationship(shelf, "items", .toMany(added: [item], removed: []))
            c.setRelationship(book, "authors", .toMany(added: [author], removed: []))
            let s = try await store.save(c)
            #expect(try await store.snapshot(s[item]).toOne("shelf") == nil)
            #expect(try await store.snapshot(s[shelf]).toMany("items") == [])
            #expect(try await store.snapshot(s[book]).toMany("authors") == [])

            var u = store.changes()
            u.setRelationship(s[item], "shelf", .toOne(s[shelf]))
            u.setRelationship(s[author], "books", .toMany(added: [s[book]], removed: []))
            try await store.save(u)
            #expect(try await store.snapshot(s[shelf]).toMany("items") == [s[item]])
            #expect(try await store.snapshot(s[book]).toMany("authors") == [s[author]])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func targetsMustExistAndHaveTheRightEntity(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let shelf = c.insert("Shelf", ["name": .string("S")])
            let person = c.insert("Person", ["name": .string("P")])
            let s = try await store.save(c)
            let before = try await store.dump()

            var missing = store.changes()
            let item = missing.insert("Item", ["title": .string("i")])
            missing.setRelationship(item, "shelf", .toOne(store.id("Shelf", 42)))
            #expect(await modelError { try await store.save(missing) }?.code == .notFound)

            var unsaved = store.changes()
            unsaved.update(s[shelf], ["name": .string("S2")])
            unsaved.setRelationship(
                s[person], "mentor", .toOne(.temporary(storeIdentifier: store.storeIdentifier, entityName: "Person")))
            #expect(await modelError { try await store.save(unsaved) }?.code == .notFound)

            var wrong = store.changes()
            wrong.setRelationship(s[person], "mentor", .toOne(s[shelf]))
            #expect(await modelError { try await store.save(wrong) }?.code == .typeMismatch)

            var wrongKind = store.changes()
            wrongKind.setRelationship(s[person], "friends", .toOne(s[person]))
            #expect(await modelError { try await store.save(wrongKind) }?.code == .invalidArgument)
            #expect(try await store.dump() == before)

            // An object removed from a to-many relationship need not exist any more.
            var removal = store.changes()
            removal.setRelationship(s[person], "friends", .toMany(added: [], removed: [store.id("Person", 42)]))
            try await store.save(removal)
        }
    }
}
