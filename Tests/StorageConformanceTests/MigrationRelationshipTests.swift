import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import Testing

/// Inferred migrations of relationships on every backend, with data: added relationships start
/// empty and work at once (to-one, to-many, many-to-many through a new entity); removing one that
/// holds references needs permission; a change of inverse that would move how references are
/// stored is refused as a staged migration's work. (That deletes follow a migrated delete rule is
/// the engine's to check: ModelEngineTests' MigratedDeleteRuleTests.)
@Suite struct MigrationRelationshipTests {
    /// SampleTrips with a Companion entity: Trip.companions ↔ Companion.trips (many-to-many),
    /// and BucketListItem.guide (to-one, no inverse).
    static var withCompanions: Schema {
        var schema = MigrationTests.trips("Trip") { trip in
            trip.relationships.append(
                RelationshipDescription(name: "companions", destination: "Companion", isToMany: true, inverse: "trips"))
        }
        let item = schema.entities.firstIndex { $0.name == "BucketListItem" }! // SampleTrips has it
        schema.entities[item].relationships.append(RelationshipDescription(name: "guide", destination: "Companion"))
        schema.entities.append(
            EntityDescription(
                name: "Companion", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [
                    RelationshipDescription(name: "trips", destination: "Trip", isToMany: true, inverse: "companions")
                ]))
        return schema
    }

    @Test(arguments: BackendKind.allCases)
    func addedRelationshipsStartEmptyAndWork(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await MigrationTests.load(store)
            // A required new relationship cannot be given to the trips already stored.
            var required = Self.withCompanions
            required.entities[0].relationships.append(
                RelationshipDescription(name: "owner", destination: "Companion", isOptional: false))
            try await MigrationTests.expectRefusal(
                store, to: required, mentioning: "Trip.owner is required, and 3 existing object(s)")

            let plan = try await store.backend.migrate(to: Self.withCompanions, options: MigrationOptions())
            #expect(Set(plan.steps.map(\.kind)) == [.addEntity, .addRelationship], "\(plan.steps)")
            #expect(plan.steps.filter { $0.kind == .addRelationship }.map(\.objects).sorted() == [2, 3])
            #expect(plan.dataLoss.isEmpty)
            let store = try MigrationTests.migrated(store, Self.withCompanions)
            let kyoto = try await store.snapshot(ids["Kyoto"]!) // load named it
            #expect(kyoto.toMany("companions").isEmpty && kyoto.toMany("bucketList").count == 2)
            #expect(try await store.snapshot(ids["Temple"]!).toOne("guide") == nil) // load named it

            var c = store.changes()
            let ann = c.insert("Companion", ["name": .string("Ann")])
            c.link(ids["Kyoto"]!, "companions", ann) // load named it
            c.link(ids["Rome"]!, "companions", ann) // load named it
            c.link(ids["Temple"]!, "guide", ann) // load named it
            let saved = try await store.save(c)
            #expect(
                try await store.values("Trip", "ANY companions.name == \"Ann\"", key: "name", sort: ["name"]) == [
                    "Kyoto", "Rome",
                ])
            #expect(Set(try await store.snapshot(saved[ann]).toMany("trips")) == [ids["Kyoto"]!, ids["Rome"]!])
            #expect(try await store.values("BucketListItem", "guide.name == \"Ann\"", key: "title") == ["Temple"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func removingARelationshipThatHoldsReferencesNeedsPermission(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await MigrationTests.load(store)
            var new = MigrationTests.trips("Trip") { $0.relationships.removeAll { $0.name == "livingAccommodation" } }
            let place = new.entities.firstIndex { $0.name == "LivingAccommodation" }! // SampleTrips has it
            new.entities[place].relationships.removeAll { $0.name == "trip" }
            try await MigrationTests.expectRefusal(
                store, to: new, mentioning: "remove relationship livingAccommodation: its references are deleted")
            let plan = try await store.backend.migrate(to: new, options: MigrationOptions(allowDataLoss: true))
            #expect(plan.dataLoss.map(\.kind) == [.removeRelationship, .removeRelationship], "\(plan.steps)")
            #expect(plan.dataLoss.map(\.objects) == [1, 1])
            let store = try MigrationTests.migrated(store, new)
            // Both objects stay; only the reference between them is gone. (`load` named Paris.)
            let paris = try await store.snapshot(ids["Paris"]!)
            #expect(paris.relationships["livingAccommodation"] == nil)
            #expect(try await store.values("LivingAccommodation", key: "placeName") == ["Flat"])
            #expect(try await store.snapshot(ids["Kyoto"]!).toMany("bucketList").count == 2) // load named it
        }
    }

    @Test(arguments: BackendKind.allCases)
    func anInverseThatMovesTheReferencesIsRefused(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            try await MigrationTests.load(store)
            // Without its inverse, Trip.bucketList is stored in a table of its own rather than
            // in BucketListItem's `trip` column.
            let new = MigrationTests.trips("Trip") { trip in
                trip.relationships[trip.relationships.firstIndex { $0.name == "bucketList" }!].inverse = nil
            }
            try await MigrationTests.expectRefusal(
                store, to: new, mentioning: "Trip.bucketList changes how its references are stored")
            try await MigrationTests.expectRefusal(store, to: new, mentioning: "this needs a staged migration")
        }
    }

    /// Trip with a subentity Biz; Item with a required `trip` and `trips` of at least one.
    static func items(required: Bool, biz: Bool) -> Schema {
        let trip = EntityDescription(name: "Trip", attributes: [AttributeDescription(name: "name", type: .string)])
        let item = EntityDescription(
            name: "Item", attributes: [AttributeDescription(name: "title", type: .string)],
            relationships: [
                RelationshipDescription(name: "trip", destination: "Trip", isOptional: !required),
                RelationshipDescription(
                    name: "trips", destination: "Trip", isToMany: true, minCount: required ? 1 : nil),
            ])
        return Schema(entities: [trip, item] + (biz ? [EntityDescription(name: "Biz", superentity: "Trip")] : []))
    }

    @Test(arguments: BackendKind.allCases)
    func removingAnEntityRefusesToLeaveRequiredReferencesEmpty(_ kind: BackendKind) async throws {
        try await withStore(kind, Self.items(required: true, biz: true)) { store in
            var c = store.changes()
            let plain = c.insert("Trip", ["name": .string("plain")])
            let biz = c.insert("Biz", ["name": .string("biz")])
            // `only` holds nothing but the Biz; `both` keeps the plain trip in each.
            let only = c.insert("Item", ["title": .string("only")])
            let both = c.insert("Item", ["title": .string("both")])
            c.link(only, "trip", biz)
            c.link(only, "trips", biz)
            c.link(both, "trip", plain)
            c.link(both, "trips", plain)
            c.link(both, "trips", biz)
            let saved = try await store.save(c)
            let onlyURI = saved[only].uriRepresentation

            let without = Self.items(required: true, biz: false)
            try await MigrationTests.expectRefusal(
                store, to: without, allowDataLoss: true,
                mentioning:
                    "Item.trip is required, and 1 object(s) would lose what they hold there with the objects of Biz (\(onlyURI))"
            )
            try await MigrationTests.expectRefusal(
                store, to: without, allowDataLoss: true,
                mentioning:
                    "Item.trips needs at least 1 related object(s), and 1 object(s) would lose what they hold there with the objects of Biz (\(onlyURI))"
            )

            // Optional, the references are cleared, and the plan says where.
            let relaxed = Self.items(required: false, biz: false)
            let plan = try await store.backend.migrate(to: relaxed, options: MigrationOptions(allowDataLoss: true))
            let removal = try #require(plan.steps.first { $0.kind == .removeEntity })
            #expect(
                removal.detail
                    == "remove entity Biz: its objects are deleted, and references to them cleared in Item.trip (1 object(s)), Item.trips (2 object(s))"
            )
            let migrated = try MigrationTests.migrated(store, relaxed)
            #expect(try await migrated.snapshot(saved[only]).toOne("trip") == nil)
            #expect(try await migrated.snapshot(saved[both]).toMany("trips") == [saved[plain]])
        }
    }
}
