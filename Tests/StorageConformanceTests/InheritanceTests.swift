import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Inheritance (`includesSubentities`, `@entity`, concrete identifiers) and date arithmetic, on
/// SampleTrips: Base (Trip), Paris (PersonalTrip), Berlin (BusinessTrip), Rome (PersonalTrip).
@Suite struct InheritanceTests {
    @Test(arguments: BackendKind.allCases)
    func subentitiesAreIncludedUnlessExcluded(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            try await Datasets.trips(store)
            #expect(try await store.values("Trip", key: "name") == ["Base", "Paris", "Berlin", "Rome"])
            #expect(try await store.values("Trip", key: "name", includesSubentities: false) == ["Base"])
            #expect(try await store.values("PersonalTrip", key: "name") == ["Paris", "Rome"])
            #expect(
                try await store.values("PersonalTrip", key: "name", includesSubentities: false) == ["Paris", "Rome"])
            #expect(try await store.values("BusinessTrip", key: "name") == ["Berlin"])
            let ids = try await store.fetch("Trip").map(\.id)
            #expect(ids.map(\.entityName) == ["Trip", "PersonalTrip", "BusinessTrip", "PersonalTrip"])
            #expect(ids.map(\.primaryKey) == [1, 2, 3, 4])
            let count = try await store.backend.fetch(
                FetchDescriptor(entityName: "Trip", includesSubentities: false, resultType: .count))
            #expect(count.count == 1)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func entityNameInPredicates(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            try await Datasets.trips(store)
            try await expectMatches(
                store, "Trip", key: "name",
                [
                    ("@entity == \"PersonalTrip\"", ["Paris", "Rome"]),
                    ("@entity != \"Trip\"", ["Paris", "Berlin", "Rome"]),
                    ("@entity IN {\"BusinessTrip\", \"Trip\"}", ["Base", "Berlin"]),
                    ("@entity == \"Trip\" OR name == \"Rome\"", ["Base", "Rome"]),
                    ("NOT (@entity == \"PersonalTrip\")", ["Base", "Berlin"]),
                ])
            try await expectMatches(
                store, "PersonalTrip", key: "name",
                [
                    ("reason == \"unknown\"", ["Rome"]),
                    ("reason == \"family\" AND @entity == \"PersonalTrip\"", ["Paris"]),
                ])
        }
    }

    /// Snapshots carry the attributes of the object's concrete entity; an identifier names an
    /// object of its entity or a subentity only.
    @Test(arguments: BackendKind.allCases)
    func snapshotsAndIdentifiersFollowTheConcreteEntity(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Datasets.trips(store)
            let paris = try #require(try await store.fetch("Trip", "name == \"Paris\"").first)
            #expect(paris["reason"] == .string("family"))
            #expect(paris.attributes["perdiem"] == nil)
            #expect(Set(paris.relationships.keys) == ["bucketList", "livingAccommodation"])
            let berlin = try await store.snapshot(ids[2])
            #expect(berlin["perdiem"] == .double(80))
            #expect(berlin.attributes["reason"] == nil)

            let asTrip = store.id("Trip", 2)
            #expect(try await store.backend.snapshots(for: [asTrip]).map(\.id) == [ids[1]])
            #expect(try await store.backend.snapshots(for: [store.id("BusinessTrip", 2)]).isEmpty)
            #expect(try await store.backend.snapshots(for: [store.id("PersonalTrip", 1)]).isEmpty)
            #expect(
                try await store.backend.snapshots(for: [store.id("Trip", 99), ids[3], ids[0]]).map(\.id) == [
                    ids[3], ids[0],
                ])
            // One key at a time (a point read) reads each object as a list of keys reads it.
            let all = try await store.backend.snapshots(for: ids)
            #expect(all.map(\.id) == ids)
            for (index, id) in ids.enumerated() {
                #expect(try await store.backend.snapshots(for: [id]) == [all[index]])
            }
        }
    }

    @Test(arguments: BackendKind.allCases)
    func relationshipsAcceptSubentities(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Datasets.trips(store)
            var c = store.changes()
            let item = c.insert("BucketListItem", ["title": .string("Louvre")])
            c.link(item, "trip", ids[1])
            let saved = try await store.save(c)
            #expect(try await store.snapshot(saved[item]).toOne("trip") == ids[1])
            #expect(try await store.snapshot(ids[1]).toMany("bucketList") == [saved[item]])
            try await expectMatches(
                store, "BucketListItem", key: "title",
                [
                    ("trip.name == \"Paris\"", ["Louvre"]),
                    ("trip == CAST(\"\(store.id("Trip", 2).uriRepresentation)\", \"object\")", ["Louvre"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func dateArithmetic(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            try await Datasets.trips(store)
            try await expectMatches(
                store, "Trip", key: "name",
                [
                    ("endDate - startDate > 86400 * 3", ["Base", "Paris"]),
                    ("endDate - startDate == 86400", ["Rome"]),
                    ("(endDate - startDate) / 86400 == 9", ["Paris"]),
                    ("startDate + 86400 * 2 == endDate", ["Berlin"]),
                    ("startDate + 172800.0 >= endDate", ["Berlin", "Rome"]),
                    ("86400 + startDate == endDate", ["Rome"]),
                    ("endDate - 86400 == startDate", ["Rome"]),
                    ("startDate > CAST(\"2026-01-31T00:00:00Z\", \"date\") - 86400", ["Paris", "Berlin", "Rome"]),
                    // round(micros + seconds × 1e6) in doubles, the total rounded half away from zero.
                    ("startDate + 0.0000015 == CAST(\"2026-01-01T00:00:00.000002Z\", \"date\")", ["Base"]),
                    ("startDate - 0.0000015 == CAST(\"2025-12-31T23:59:59.999999Z\", \"date\")", ["Base"]),
                    ("startDate + 0.000001 == CAST(\"2026-01-01T00:00:00.000001Z\", \"date\")", ["Base"]),
                    ("startDate - 0.0000004 == startDate", ["Base", "Paris", "Berlin", "Rome"]),
                ])
            try await expectMatches(
                store, "BusinessTrip", key: "name",
                [
                    ("perdiem * 2 == 160", ["Berlin"]),
                    ("perdiem / 0 == nil", ["Berlin"]),
                    ("perdiem - 80 == 0", ["Berlin"]),
                ])
        }
    }
}
