import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import Testing

/// Inferred migrations on every backend: each change the planner allows, with the data checked
/// before and after (values, relationships, uniqueness, history), and each refusal, which
/// leaves the store exactly as it was.
@Suite struct MigrationTests {
    /// SampleTrips with `body` applied to the entity `name`.
    static func trips(_ name: String, _ body: (inout EntityDescription) -> Void) -> Schema {
        var schema = SampleTrips.schema
        body(&schema.entities[schema.entities.firstIndex { $0.name == name }!]) // the tests name SampleTrips' entities
        return schema
    }

    /// Kyoto (a Trip with two bucket-list items), Paris (a PersonalTrip with a place to stay),
    /// Rome (a BusinessTrip): their permanent identifiers by name.
    static func load(_ store: TestStore) async throws -> [String: PersistentIdentifier] {
        var c = store.changes(author: "loader")
        let kyoto = c.insert("Trip", trip("Kyoto", "Japan", "2026-04-01", "2026-04-09"))
        var paris = trip("Paris", "France", "2026-03-01", "2026-03-10")
        paris["reason"] = .string("family")
        let parisID = c.insert("PersonalTrip", paris)
        var rome = trip("Rome", "Italy", "2026-05-01", "2026-05-03")
        rome["perdiem"] = .double(120)
        let romeID = c.insert("BusinessTrip", rome)
        let temple = c.insert("BucketListItem", ["title": .string("Temple")])
        let garden = c.insert("BucketListItem", ["title": .string("Garden"), "isInPlan": .bool(true)])
        let flat = c.insert("LivingAccommodation", ["address": .string("1 Rue"), "placeName": .string("Flat")])
        c.link(kyoto, "bucketList", temple)
        c.link(kyoto, "bucketList", garden)
        c.link(parisID, "livingAccommodation", flat)
        let saved = try await store.save(c)
        return [
            "Kyoto": saved[kyoto], "Paris": saved[parisID], "Rome": saved[romeID], "Temple": saved[temple],
            "Garden": saved[garden], "Flat": saved[flat],
        ]
    }

    static func trip(_ name: String, _ destination: String, _ start: String, _ end: String) -> [String: Value] {
        ["name": .string(name), "destination": .string(destination), "startDate": date(start), "endDate": date(end)]
    }

    /// The store with `schema` as its own (a migrated store is reopened by its new schema).
    static func migrated(_ store: TestStore, _ schema: Schema) throws -> TestStore {
        TestStore(backend: store.backend, directory: store.directory, schema: try ResolvedSchema(schema))
    }

    /// Migrates, expecting a refusal that mentions `text`, and checks that nothing changed.
    static func expectRefusal(
        _ store: TestStore, to schema: Schema, allowDataLoss: Bool = false, mentioning text: String
    )
        async throws
    {
        let before = try await store.dump()
        let version = try await store.backend.schema().versionHash
        let error = await modelError {
            _ = try await store.backend.migrate(to: schema, options: MigrationOptions(allowDataLoss: allowDataLoss))
        }
        #expect(error?.code == .schemaMismatch, "\(String(describing: error))")
        #expect(error?.message.contains(text) == true, "\(String(describing: error))")
        #expect(try await store.dump() == before, "a refused migration changed the store")
        #expect(try await store.backend.schema().versionHash == version)
        // A dry run gives the same refusal as a plan, and changes nothing either.
        let plan = try await store.backend.migrate(
            to: schema, options: MigrationOptions(dryRun: true, allowDataLoss: allowDataLoss))
        #expect(!plan.isAllowed && plan.refusals.contains { $0.contains(text) }, "\(plan.refusals)")
    }

    /// A default of -0.0 is kept as 0.0, as a value given is: in the objects a migration fills
    /// and in those inserted after (PostgreSQL kept the sign, so backends answered differently).
    @Test(arguments: BackendKind.allCases)
    func aDefaultOfNegativeZeroIsZero(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            _ = try await Self.load(store)
            let new = Self.trips("Trip") { trip in
                trip.attributes.append(AttributeDescription(name: "tilt", type: .double, defaultValue: .double(-0.0)))
            }
            _ = try await store.backend.migrate(to: new, options: MigrationOptions())
            let store = try Self.migrated(store, new)
            var c = store.changes()
            c.insert("Trip", Self.trip("Lisbon", "Portugal", "2026-06-01", "2026-06-05"))
            try await store.save(c)
            #expect(try await store.values("Trip", key: "tilt", sort: ["name"]) == ["0.0", "0.0", "0.0", "0.0"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func addingAttributesKeepsEverythingElse(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Self.load(store)
            let new = Self.trips("Trip") { trip in
                trip.attributes.append(AttributeDescription(name: "budget", type: .double, isOptional: true))
                trip.attributes.append(AttributeDescription(name: "rating", type: .int, defaultValue: .int(3)))
                trip.indexes.append(["rating"])
            }
            let plan = try await store.backend.migrate(to: new, options: MigrationOptions(author: "mover"))
            #expect(
                plan.isAllowed && plan.fromVersion == SampleTrips.schema.versionHash
                    && plan.toVersion == new.versionHash)
            #expect(plan.steps.filter { $0.kind == .addAttribute }.map(\.objects) == [3, 3], "\(plan.steps)")
            #expect(plan.steps.contains { $0.kind == .addIndex })
            let store = try Self.migrated(store, new)
            #expect(try await store.backend.schema().versionHash == new.versionHash)
            #expect(try await store.values("Trip", key: "budget", sort: ["name"]) == ["nil", "nil", "nil"])
            #expect(try await store.values("Trip", key: "rating", sort: ["name"]) == ["3", "3", "3"])
            #expect(try await store.values("PersonalTrip", key: "reason") == ["family"])
            #expect(try await store.values("BusinessTrip", key: "perdiem") == ["120.0"])
            let kyoto = try await store.snapshot(ids["Kyoto"]!) // load named it
            #expect(Set(kyoto.toMany("bucketList")) == [ids["Temple"]!, ids["Garden"]!]) // load named them
            #expect(
                try await store.values("Trip", "rating == 3 AND budget == nil", key: "name", sort: ["name"]) == [
                    "Kyoto", "Paris", "Rome",
                ])

            // History: the load, then the migration, by its author, naming both versions.
            let history = try await store.backend.history(after: nil, limit: nil)
            #expect(history.count == 2 && history[1].author == "mover" && history[1].changes.isEmpty)
            #expect(history[1].schemaChange == SchemaVersionChange(from: plan.fromVersion, to: plan.toVersion))
            #expect(history[0].changes.count == 6)

            // New objects take the new attributes; uniqueness holds as before.
            var c = store.changes()
            var lisbon = Self.trip("Lisbon", "Portugal", "2026-06-01", "2026-06-05")
            lisbon["budget"] = .double(900)
            c.insert("Trip", lisbon)
            try await store.save(c)
            #expect(try await store.values("Trip", "budget > 100", key: "rating") == ["3"])
            var duplicate = store.changes()
            duplicate.insert("Trip", Self.trip("Kyoto", "Japan", "2026-04-01", "2026-04-09"))
            #expect(await modelError { try await store.save(duplicate) }?.code == .uniqueConstraint)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func renamesKeepValuesRelationshipsAndHistory(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Self.load(store)
            let new = Self.trips("Trip") { trip in
                let destination = trip.attributes.firstIndex { $0.name == "destination" }! // SampleTrips' Trip has it
                trip.attributes[destination].name = "place"
                trip.attributes[destination].originalName = "destination"
            }.renamingEntity("BucketListItem", to: "Wish")
            let plan = try await store.backend.migrate(to: new, options: MigrationOptions())
            #expect(plan.steps.map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.renameAttribute, .renameEntity])
            #expect(plan.steps.first { $0.kind == .renameEntity }?.objects == 2)
            let store = try Self.migrated(store, new)
            #expect(try await store.values("Trip", key: "place", sort: ["place"]) == ["France", "Italy", "Japan"])
            #expect(try await store.values("Trip", "place == \"Japan\"", key: "name") == ["Kyoto"])
            let wishes = try await store.fetch("Wish", sort: ["title"])
            // load named them
            #expect(wishes.map(\.id.primaryKey) == [ids["Garden"]!.primaryKey, ids["Temple"]!.primaryKey])
            #expect(
                wishes.map { $0.toOne("trip")?.primaryKey } == [ids["Kyoto"]!.primaryKey, ids["Kyoto"]!.primaryKey])
            #expect(
                try await store.values("Wish", "trip.place == \"Japan\" AND isInPlan == true", key: "title") == [
                    "Garden"
                ])
            let history = try await store.backend.history(after: nil, limit: nil)
            #expect(
                history[0].changes.filter { $0.id.entityName == "Wish" }.count == 2, "past changes name the new entity")
            #expect(history[0].changes.allSatisfy { $0.id.entityName != "BucketListItem" })
            // The old name is refused with the new one named, never a silent miss.
            let oldURI = PersistentIdentifier(
                // load named it
                storeIdentifier: store.storeIdentifier, entityName: "BucketListItem", key: ids["Garden"]!.key)
            let byURI = await modelError { _ = try await store.backend.snapshots(for: [oldURI]) }
            #expect(byURI?.message.contains("renamed to 'Wish'") == true, "\(String(describing: byURI))")
            let old = await modelError { _ = try await store.fetch("BucketListItem") }
            #expect(
                old?.code == .unknownEntity && old?.message.contains("renamed to 'Wish'") == true,
                "\(String(describing: old))")
            // The unique constraint on name and dates still holds; the index on the renamed
            // attribute still answers.
            var duplicate = store.changes()
            duplicate.insert(
                "Trip",
                [
                    "name": .string("Kyoto"), "place": .string("x"), "startDate": date("2026-04-01"),
                    "endDate": date("2026-04-09"),
                ])
            #expect(await modelError { try await store.save(duplicate) }?.code == .uniqueConstraint)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func removalsThatLoseDataNeedPermission(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Self.load(store)
            var new = Self.trips("Trip") { trip in
                trip.attributes.removeAll { $0.name == "destination" }
                trip.relationships.removeAll { $0.name == "livingAccommodation" }
            }
            new.entities.removeAll { $0.name == "LivingAccommodation" }
            try await Self.expectRefusal(
                store, to: new, mentioning: "remove destination: its values are deleted (3 object(s)); allow data loss")
            try await Self.expectRefusal(
                store, to: new, mentioning: "remove entity LivingAccommodation: its objects are deleted (1 object(s))")

            let plan = try await store.backend.migrate(to: new, options: MigrationOptions(allowDataLoss: true))
            #expect(Set(plan.dataLoss.map(\.kind)) == [.removeAttribute, .removeEntity, .removeRelationship])
            let store = try Self.migrated(store, new)
            #expect(try await store.fetch("Trip").allSatisfy { $0.attributes["destination"] == nil })
            #expect(try await store.values("Trip", key: "name", sort: ["name"]) == ["Kyoto", "Paris", "Rome"])
            #expect(try await store.snapshot(ids["Kyoto"]!).toMany("bucketList").count == 2) // load named it
            #expect(await modelError { _ = try await store.fetch("LivingAccommodation") }?.code == .unknownEntity)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func optionalityChanges(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            try await Self.load(store)
            // Optional first (nothing to check), then a nil, then required again.
            let relaxed = Self.trips("Trip") { trip in
                trip.attributes[trip.attributes.firstIndex { $0.name == "destination" }!].isOptional = true // it has it
            }
            let plan = try await store.backend.migrate(to: relaxed, options: MigrationOptions())
            #expect(plan.steps.map(\.kind) == [.relaxAttribute])
            var store = try Self.migrated(store, relaxed)
            var c = store.changes()
            c.insert(
                "Trip", ["name": .string("Nowhere"), "startDate": date("2026-07-01"), "endDate": date("2026-07-02")])
            try await store.save(c)

            let strict = SampleTrips.schema
            try await Self.expectRefusal(
                store, to: strict, mentioning: "Trip.destination becomes required, but 1 object(s) hold nil (modeld://")
            let filled = Self.trips("Trip") { trip in
                // it has it
                trip.attributes[trip.attributes.firstIndex { $0.name == "destination" }!].defaultValue = .string("TBD")
            }
            let fill = try await store.backend.migrate(to: filled, options: MigrationOptions())
            #expect(fill.steps.first { $0.kind == .requireAttribute }?.objects == 1)
            store = try Self.migrated(store, filled)
            #expect(try await store.values("Trip", "name == \"Nowhere\"", key: "destination") == ["TBD"])
            #expect(try await store.values("Trip", "name == \"Kyoto\"", key: "destination") == ["Japan"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func uniqueConstraintsAreCheckedAgainstTheData(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Self.load(store)
            var c = store.changes()
            c.update(ids["Rome"]!, ["destination": .string("Japan")]) // load named it
            try await store.save(c)
            let unique = Self.trips("Trip") { $0.uniqueConstraints.append(["destination"]) }
            try await Self.expectRefusal(
                store, to: unique, mentioning: "violate the new unique constraint (destination): (modeld://")
            let plan = try await store.backend.migrate(to: unique, options: MigrationOptions(dryRun: true))
            let named = plan.refusals.joined()
            // load named them
            #expect(named.contains(ids["Kyoto"]!.uriRepresentation) && named.contains(ids["Rome"]!.uriRepresentation))

            var fix = store.changes()
            fix.update(ids["Rome"]!, ["destination": .string("Italy")]) // load named it
            try await store.save(fix)
            _ = try await store.backend.migrate(to: unique, options: MigrationOptions())
            let constrained = try Self.migrated(store, unique)
            var duplicate = constrained.changes()
            duplicate.insert("Trip", Self.trip("Osaka", "Japan", "2026-08-01", "2026-08-02"))
            #expect(await modelError { try await constrained.save(duplicate) }?.code == .uniqueConstraint)

            // Removing a constraint needs no check, and lets equal values in.
            _ = try await constrained.backend.migrate(to: SampleTrips.schema, options: MigrationOptions())
            let free = try Self.migrated(store, SampleTrips.schema)
            try await free.save(duplicate)
            #expect(
                try await free.values("Trip", "destination == \"Japan\"", key: "name", sort: ["name"]) == [
                    "Kyoto", "Osaka",
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func relationshipBoundsAreCheckedAgainstTheData(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await Self.load(store)
            let bounded = Self.trips("Trip") { trip in
                trip.relationships[trip.relationships.firstIndex { $0.name == "bucketList" }!].minCount = 1 // it has it
            }
            try await Self.expectRefusal(
                store, to: bounded, mentioning: "Trip.bucketList: 2 object(s) break its new bounds")
            let plan = try await store.backend.migrate(to: bounded, options: MigrationOptions(dryRun: true))
            #expect(plan.refusals.joined().contains(ids["Rome"]!.uriRepresentation)) // load named it
            let looser = Self.trips("Trip") { trip in
                trip.relationships[trip.relationships.firstIndex { $0.name == "bucketList" }!].maxCount = 5 // it has it
            }
            let allowed = try await store.backend.migrate(to: looser, options: MigrationOptions())
            #expect(allowed.steps.map(\.kind) == [.changeRelationship])
            let store = try Self.migrated(store, looser)
            #expect(try await store.snapshot(ids["Kyoto"]!).toMany("bucketList").count == 2) // load named it
        }
    }

    /// What an inferred migration cannot do says that it needs a staged one, and why.
    @Test(arguments: BackendKind.allCases)
    func whatNeedsAStagedMigrationIsRefused(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            try await Self.load(store)
            let retyped = Self.trips("Trip") { trip in
                trip.attributes[trip.attributes.firstIndex { $0.name == "startDate" }!].type = .string // it has it
            }
            try await Self.expectRefusal(store, to: retyped, mentioning: "Trip.startDate changes type (date → string)")
            try await Self.expectRefusal(store, to: retyped, mentioning: "this needs a staged migration")
            let required = Self.trips("Trip") {
                $0.attributes.append(AttributeDescription(name: "budget", type: .double))
            }
            try await Self.expectRefusal(
                store, to: required, mentioning: "Trip.budget is required and has no default, and 3 existing object(s)")
            // Rome would leave the Trip hierarchy's table; Kyoto, a plain Trip, would have no entity.
            let moved = Self.trips("BusinessTrip") { $0.superentity = nil }
            try await Self.expectRefusal(
                store, to: moved, mentioning: "BusinessTrip moves in its hierarchy (superentity Trip → none)")
            let abstract = Self.trips("Trip") { $0.isAbstract = true }
            try await Self.expectRefusal(store, to: abstract, mentioning: "Trip becomes abstract")
        }
    }

    /// A dry run returns the plan with its counts and writes nothing, not even history.
    @Test(arguments: BackendKind.allCases)
    func aDryRunChangesNothing(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            try await Self.load(store)
            let before = try await store.dump()
            let new = Self.trips("BucketListItem") { item in
                item.attributes.append(
                    AttributeDescription(name: "cost", type: .decimal, defaultValue: .decimal(Decimal(5))))
            }
            let plan = try await store.backend.migrate(to: new, options: MigrationOptions(dryRun: true))
            #expect(plan.isAllowed && plan.steps.map(\.objects) == [2])
            #expect(plan.steps.first?.detail.contains("existing objects get 5") == true, "\(plan.steps)")
            #expect(try await store.dump() == before)
            #expect(try await store.backend.schema().versionHash == SampleTrips.schema.versionHash)
            // The same migration, made: the decimal default is what existing objects hold.
            _ = try await store.backend.migrate(to: new, options: MigrationOptions())
            let store = try Self.migrated(store, new)
            #expect(
                try await store.values("BucketListItem", "cost == 5", key: "title", sort: ["title"]) == [
                    "Garden", "Temple",
                ])
        }
    }
}
