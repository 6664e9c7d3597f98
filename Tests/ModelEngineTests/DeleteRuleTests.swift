import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import Testing

/// Delete rules run at save: nullify, cascade, deny, noAction.
@Suite struct DeleteRuleTests {
    @Test(arguments: BackendKind.allCases)
    func nullifyRemovesTheDeletedObjectFromItsInverse(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Articles.schema) { store in
            let context = store.context()
            let tech = try await context.insert("Category", attributes: ["name": .string("tech")])
            let article = try await context.insert(
                "Article", attributes: ["name": .string("Swift 6")],
                relationships: ["category": .toOne(tech)])
            let ids = try await context.save().remappedIdentifiers
            let techID = try #require(ids[tech]), articleID = try #require(ids[article])

            try await context.delete(techID)
            // Before the save the store's article still points at the category; the context's
            // own reads show what the rule will do, as its fetches do…
            #expect(try await store.context().object(for: articleID)?.toOne("category") == techID)
            #expect(try await context.object(for: articleID)?.toOne("category") == nil)
            let fetched = try await context.fetch(FetchDescriptor(entityName: "Article")).objects
            #expect(fetched.map { $0.toOne("category") } == [nil])
            try await context.save()
            // …after it, the rule has cleared it, and the article was not deleted.
            let read = try #require(try await store.context().object(for: articleID))
            #expect(read.toOne("category") == nil)
            #expect(read.version == 2)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func denyRefusesWhileRelatedObjectsSurvive(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let library = try await context.insert("Library", attributes: ["name": .string("Central")])
            let shelf = try await context.insert(
                "Shelf", attributes: ["name": .string("S1")],
                relationships: ["library": .toOne(library)])
            let ids = try await context.save().remappedIdentifiers
            let libraryID = try #require(ids[library]), shelfID = try #require(ids[shelf])

            try await context.delete(libraryID)
            let error = await modelError { try await context.save() }
            #expect(error?.code == .deleteDenied)
            #expect(error?.message.contains(shelfID.uriRepresentation) == true)
            #expect(try await store.context().object(for: libraryID) != nil)

            // Deleting the shelf in the same save lets the library go.
            try await context.delete(shelfID)
            try await context.save()
            #expect(try await store.context().object(for: libraryID) == nil)
            #expect(try await store.context().object(for: shelfID) == nil)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func cascadeReachesObjectsTheContextNeverRead(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: SampleTrips.schema) { store in
            let writer = store.context()
            let trip = try await writer.insert(
                "Trip",
                attributes: [
                    "name": .string("T"), "destination": .string("D"),
                    "startDate": .date(Date.iso("2026-01-01")), "endDate": .date(Date.iso("2026-01-02")),
                ])
            for n in 0..<20 {
                _ = try await writer.insert(
                    "BucketListItem", attributes: ["title": .string("item \(n)")],
                    relationships: ["trip": .toOne(trip)])
            }
            let tripID = try #require(try await writer.save().remappedIdentifiers[trip])
            let deleter = store.context()
            try await deleter.delete(tripID)
            try await deleter.save()
            #expect(try await deleter.count(FetchDescriptor(entityName: "BucketListItem")) == 0)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func deletingAnInsertedObjectLeavesNoTrace(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let shelf = try await context.insert("Shelf", attributes: ["name": .string("tmp")])
            let item = try await context.insert(
                "Item", attributes: ["title": .string("x")], relationships: ["shelf": .toOne(shelf)])
            try await context.delete(shelf)
            let result = try await context.save()
            let itemID = try #require(result.remappedIdentifiers[item])
            #expect(result.remappedIdentifiers[shelf] == nil)
            #expect(try await store.context().object(for: itemID)?.toOne("shelf") == nil)
            #expect(try await store.context().count(FetchDescriptor(entityName: "Shelf")) == 0)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func noActionLeavesReferencesDangling(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let mentor = try await context.insert("Person", attributes: ["name": .string("M")])
            let student = try await context.insert(
                "Person", attributes: ["name": .string("S")],
                relationships: ["mentor": .toOne(mentor), "friends": .toMany([mentor])])
            let ids = try await context.save().remappedIdentifiers
            let mentorID = try #require(ids[mentor]), studentID = try #require(ids[student])
            try await context.delete(mentorID)
            try await context.save()
            let read = try #require(try await store.context().object(for: studentID))
            // The to-one without an inverse still names the deleted object; resolving it finds nothing.
            #expect(read.toOne("mentor")?.primaryKey == mentorID.primaryKey)
            #expect(try await store.context().object(for: mentorID) == nil)
            // Join-table rows of a deleted object go with it.
            #expect(read.toMany("friends") == [])
        }
    }
}
