import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import Testing

/// Apple's SampleTrips through the engine: inheritance, cascade deletes and inverses,
/// `#Unique` on name + dates (error and upsert), history tombstones.
@Suite struct SampleTripsTests {
    static let start = Value.date(Date.iso("2026-07-01"))
    static let end = Value.date(Date.iso("2026-07-14"))

    func insertTrip(
        _ context: ModelContext, _ entity: String = "Trip", name: String, destination: String = "Lisbon",
        extra: [String: Value] = [:]
    ) async throws -> PersistentIdentifier {
        var values: [String: Value] = [
            "name": .string(name), "destination": .string(destination),
            "startDate": Self.start, "endDate": Self.end,
        ]
        values.merge(extra) { _, new in new }
        return try await context.insert(entity, attributes: values)
    }

    @Test(arguments: BackendKind.allCases)
    func fetchingTripsIncludesSubentities(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: SampleTrips.schema) { store in
            let context = store.context()
            _ = try await insertTrip(context, name: "Plain")
            _ = try await insertTrip(context, "PersonalTrip", name: "Family", extra: ["reason": .string("family")])
            _ = try await insertTrip(context, "BusinessTrip", name: "Conference", extra: ["perdiem": .int(120)])
            try await context.save()

            let all = try await context.fetch(FetchDescriptor(entityName: "Trip", sortBy: [SortDescriptor("name")]))
            #expect(all.objects.map { $0["name"] } == [.string("Conference"), .string("Family"), .string("Plain")])
            #expect(all.objects.map(\.id.entityName) == ["BusinessTrip", "PersonalTrip", "Trip"])
            // The int given for a double attribute was stored as a double.
            #expect(all.objects[0]["perdiem"] == .double(120))
            // A subentity's default applies.
            let onlyTrips = try await context.fetch(FetchDescriptor(entityName: "Trip", includesSubentities: false))
            #expect(onlyTrips.count == 1)
            let business = try await context.fetch(FetchDescriptor(entityName: "BusinessTrip"))
            #expect(business.objects.map { $0["name"] } == [.string("Conference")])
            let personal = try await context.fetch(
                FetchDescriptor(
                    entityName: "Trip", predicate: try PredicateParser.parse(#"@entity == "PersonalTrip""#)))
            #expect(personal.objects.map { $0["reason"] } == [.string("family")])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func deletingATripCascadesToItsItemsAndAccommodation(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: SampleTrips.schema) { store in
            let context = store.context(author: "app")
            let trip = try await insertTrip(context, name: "Alps")
            let other = try await insertTrip(context, name: "Coast")
            var items: [PersistentIdentifier] = []
            for title in ["Hike", "Lake", "Cheese"] {
                items.append(
                    try await context.insert(
                        "BucketListItem", attributes: ["title": .string(title)],
                        relationships: ["trip": .toOne(trip)]))
            }
            let keep = try await context.insert(
                "BucketListItem", attributes: ["title": .string("Beach")],
                relationships: ["trip": .toOne(other)])
            let stay = try await context.insert(
                "LivingAccommodation",
                attributes: ["address": .string("1 Rue"), "placeName": .string("Chalet")],
                relationships: ["trip": .toOne(trip)])
            // The inverse side is maintained in the context before any save.
            let pendingTrip = try #require(try await context.object(for: trip))
            #expect(Set(pendingTrip.toMany("bucketList")) == Set(items))
            #expect(pendingTrip.toOne("livingAccommodation") == stay)

            let saved = try await context.save()
            let tripID = try #require(saved.remappedIdentifiers[trip])
            #expect(!tripID.isTemporary)
            let savedTrip = try #require(try await context.object(for: tripID))
            #expect(savedTrip.toMany("bucketList").count == 3)
            #expect(savedTrip.toMany("bucketList").allSatisfy { !$0.isTemporary })

            let before = try await store.container.currentHistoryToken()
            try await context.delete(tripID)
            try await context.save()
            #expect(try await context.count(FetchDescriptor(entityName: "BucketListItem")) == 1)
            #expect(try await context.count(FetchDescriptor(entityName: "LivingAccommodation")) == 0)
            let survivor = try #require(saved.remappedIdentifiers[keep])
            #expect(try await context.object(for: survivor)?["title"] == .string("Beach"))

            // One transaction, with the trip's tombstone keeping name and dates.
            let history = try await store.container.history(after: before)
            #expect(history.count == 1)
            let transaction = try #require(history.first)
            #expect(transaction.author == "app")
            #expect(transaction.changes.filter { $0.kind == .delete }.count == 5)
            let tombstone = try #require(transaction.changes.first { $0.id == tripID })
            #expect(tombstone.tombstone == ["name": .string("Alps"), "startDate": Self.start, "endDate": Self.end])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func uniqueNameAndDatesRefuseADuplicate(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: SampleTrips.schema) { store in
            let context = store.context()
            _ = try await insertTrip(context, name: "Rome")
            try await context.save()
            _ = try await insertTrip(context, "BusinessTrip", name: "Rome", destination: "Roma")
            let error = await modelError { try await context.save() }
            #expect(error?.code == .uniqueConstraint)
            #expect(error?.message.contains("Rome") == true)
            // Nothing was written; the pending insert is still there to fix.
            #expect(try await store.container.makeContext().count(FetchDescriptor(entityName: "Trip")) == 1)
            #expect(await context.hasChanges)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func uniqueNameAndDatesUpsertLikeSwiftData(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: SampleTrips.schema) { store in
            let first = store.context()
            let original = try await insertTrip(first, name: "Rome", destination: "Rome")
            let originalID = try #require(try await first.save().remappedIdentifiers[original])

            let second = store.context(uniquenessPolicy: .upsert)
            let again = try await insertTrip(second, name: "Rome", destination: "Roma, Italia")
            let result = try await second.save()
            #expect(result.remappedIdentifiers[again] == originalID)
            let trips = try await second.fetch(FetchDescriptor(entityName: "Trip"))
            #expect(trips.objects.map(\.id) == [originalID])
            #expect(trips.objects.first?["destination"] == .string("Roma, Italia"))
            #expect(trips.objects.first?.version == 2)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func bucketListSearchFromTheSample(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: SampleTrips.schema) { store in
            let context = store.context()
            let alps = try await insertTrip(context, name: "Alps")
            let coast = try await insertTrip(context, name: "Coast")
            for (title, trip) in [("Hike the ridge", alps), ("Hike the cliffs", coast), ("Swim", alps)] {
                _ = try await context.insert(
                    "BucketListItem", attributes: ["title": .string(title)],
                    relationships: ["trip": .toOne(trip)])
            }
            // descriptor.predicate = #Predicate { item in item.title.contains(searchText) && tripName == item.trip?.name }
            let predicate = try PredicateParser.parse(#"title CONTAINS "Hike" AND trip.name == "Alps""#)
            // Before the save (pending changes) and after it, the same answer.
            for _ in 0..<2 {
                let found = try await context.fetch(FetchDescriptor(entityName: "BucketListItem", predicate: predicate))
                #expect(found.objects.map { $0["title"] } == [.string("Hike the ridge")])
                try await context.save()
            }
        }
    }
}
