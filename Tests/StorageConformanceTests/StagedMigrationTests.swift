import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import Testing

/// Staged migrations on every backend (SwiftData's `SchemaMigrationPlan` as one unit): reads
/// and saves under each stage's schema, steps between them, and one commit — or a rollback that
/// leaves the store exactly as it was. Meanwhile the store's other writes are refused and its
/// reads see the store as it was.
@Suite struct StagedMigrationTests {
    /// Trip gains `country` (optional) in the middle version, and loses `destination` in the last.
    static let middle = MigrationTests.trips("Trip") { trip in
        trip.attributes.append(AttributeDescription(name: "country", type: .string, isOptional: true))
    }
    static let last = MigrationTests.trips("Trip") { trip in
        trip.attributes.append(AttributeDescription(name: "country", type: .string, isOptional: true))
        trip.attributes.removeAll { $0.name == "destination" }
    }

    /// The migration as a test store of the schema it is at.
    static func view(_ migration: any StagedMigration, _ schema: Schema) throws -> TestStore {
        TestStore(backend: migration, directory: nil, schema: try ResolvedSchema(schema))
    }

    @Test(arguments: BackendKind.allCases)
    func everyStageCommitsAtOnce(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let ids = try await MigrationTests.load(store)
            let migration = try await store.backend.beginStagedMigration(author: "planner")

            // willMigrate of the first stage: reads under the old schema.
            let old = try Self.view(migration, SampleTrips.schema)
            #expect(try await old.values("Trip", key: "destination", sort: ["name"]) == ["Japan", "France", "Italy"])

            // Meanwhile the store's writes are refused, and its reads see the store as it was.
            var blocked = store.changes()
            blocked.insert("Trip", MigrationTests.trip("Oslo", "Norway", "2026-07-01", "2026-07-02"))
            let refused = await modelError { try await store.save(blocked) }
            #expect(refused?.code == .unavailable && refused?.message.contains("staged migration") == true)
            let inferred = await modelError {
                _ = try await store.backend.migrate(to: Self.middle, options: MigrationOptions())
            }
            #expect(inferred?.code == .unavailable, "\(String(describing: inferred))")
            #expect(
                await modelError { _ = try await store.backend.beginStagedMigration(author: nil) }?.code == .unavailable
            )

            // Step one, then didMigrate: fill the new attribute from the old one.
            let first = try await migration.migrate(to: Self.middle, options: MigrationOptions())
            #expect(first.steps.map(\.kind) == [.addAttribute] && first.toVersion == Self.middle.versionHash)
            #expect(try await migration.schema().versionHash == Self.middle.versionHash)
            let middle = try Self.view(migration, Self.middle)
            var fill = middle.changes(author: "filler")
            for trip in try await middle.fetch("Trip") {
                guard case .string(let destination) = trip.attributes["destination"] else { continue }
                fill.update(trip.id, ["country": .string("in " + destination)])
            }
            try await middle.save(fill)
            #expect(try await store.values("Trip", key: "name", sort: ["name"]) == ["Kyoto", "Paris", "Rome"])
            #expect(try await store.backend.schema().versionHash == SampleTrips.schema.versionHash)

            // Step two removes `destination`: a stage of a plan may lose data, when it says so.
            let lossy = await modelError { _ = try await migration.migrate(to: Self.last, options: MigrationOptions()) }
            #expect(lossy?.code == .schemaMismatch, "a refused step leaves the migration where it was")
            #expect(try await migration.schema().versionHash == Self.middle.versionHash)
            _ = try await migration.migrate(to: Self.last, options: MigrationOptions(allowDataLoss: true))
            try await migration.commit()

            let after = try MigrationTests.migrated(store, Self.last)
            #expect(try await after.backend.schema().versionHash == Self.last.versionHash)
            #expect(
                try await after.values("Trip", key: "country", sort: ["name"]) == ["in Japan", "in France", "in Italy"])
            #expect(try await after.fetch("Trip").allSatisfy { $0.attributes["destination"] == nil })
            #expect(try await after.snapshot(ids["Kyoto"]!).toMany("bucketList").count == 2) // load named it
            // History: the load, step one, the fill, step two — in that order.
            let history = try await after.backend.history(after: nil, limit: nil)
            #expect(history.count == 4, "\(history)")
            #expect(history[1].schemaChange?.to == Self.middle.versionHash && history[1].author == "planner")
            #expect(history[2].author == "filler" && history[2].changes.count == 3)
            #expect(
                history[3].schemaChange?.from == Self.middle.versionHash
                    && history[3].schemaChange?.to == Self.last.versionHash)

            // The store writes again; the migration is over and says so.
            var lisbon = after.changes()
            lisbon.insert(
                "Trip",
                ["name": .string("Lisbon"), "startDate": date("2026-06-01"), "endDate": date("2026-06-05")])
            try await after.save(lisbon)
            #expect(
                await modelError { _ = try await migration.fetch(FetchDescriptor(entityName: "Trip"), overlay: nil) }?
                    .code == .invalidArgument)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func aRollbackLeavesTheStoreAsItWas(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            _ = try await MigrationTests.load(store)
            let before = try await store.dump()
            for ending in ["rollback", "close"] {
                let migration = try await store.backend.beginStagedMigration(author: nil)
                _ = try await migration.migrate(to: Self.middle, options: MigrationOptions())
                let middle = try Self.view(migration, Self.middle)
                var c = middle.changes()
                c.insert("Trip", MigrationTests.trip("Oslo", "Norway", "2026-07-01", "2026-07-02"))
                try await middle.save(c)
                #expect(try await middle.values("Trip", key: "name").count == 4)
                if ending == "rollback" { await migration.rollback() } else { await migration.close() }
                #expect(try await store.dump() == before, "a \(ending) kept something")
                #expect(try await store.backend.schema().versionHash == SampleTrips.schema.versionHash)
            }
            // The store takes writes again.
            var c = store.changes()
            c.insert("Trip", MigrationTests.trip("Oslo", "Norway", "2026-07-01", "2026-07-02"))
            try await store.save(c)
            #expect(try await store.values("Trip", key: "name").count == 4)
        }
    }

    /// A migration's reads show pending changes as the store's reads do (a session's unsaved
    /// changes, inside a staged migration), and keep nothing of them.
    @Test(arguments: BackendKind.allCases)
    func readsInsideAMigrationSeePendingChanges(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            _ = try await MigrationTests.load(store)
            let migration = try await store.backend.beginStagedMigration(author: nil)
            _ = try await migration.migrate(to: Self.middle, options: MigrationOptions())
            let middle = try Self.view(migration, Self.middle)
            var pending = middle.changes()
            pending.insert("Trip", MigrationTests.trip("Oslo", "Norway", "2026-07-01", "2026-07-02"))
            let kyoto = try #require(try await middle.fetch("Trip", "name == \"Kyoto\"").first)
            pending.update(kyoto.id, ["country": .string("Japan")])

            #expect(
                try await middle.values("Trip", key: "name", sort: ["name"], overlay: pending)
                    == ["Kyoto", "Oslo", "Paris", "Rome"])
            let withCountry = try await middle.values("Trip", "country != nil", key: "name", overlay: pending)
            let countries = try await middle.values("Trip", key: "country", sort: ["name"], overlay: pending)
            #expect(withCountry == ["Kyoto"], "\(withCountry); \(countries)")
            let counted = try await migration.aggregate(
                AggregateDescriptor(entityName: "Trip", aggregations: [Aggregation("n", .count)]), overlay: pending.set)
            #expect(counted == [["n": .int(4)]])

            #expect(try await middle.values("Trip", key: "name", sort: ["name"]) == ["Kyoto", "Paris", "Rome"])
            try await migration.commit()
            let after = try MigrationTests.migrated(store, Self.middle)
            #expect(try await after.values("Trip", key: "name", sort: ["name"]) == ["Kyoto", "Paris", "Rome"])
            #expect(try await after.values("Trip", "country != nil", key: "name").isEmpty)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func badSavesInsideAMigrationAreUndoneAlone(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            _ = try await MigrationTests.load(store)
            let migration = try await store.backend.beginStagedMigration(author: nil)
            let view = try Self.view(migration, SampleTrips.schema)
            var good = view.changes()
            good.insert("Trip", MigrationTests.trip("Oslo", "Norway", "2026-07-01", "2026-07-02"))
            try await view.save(good)
            var duplicate = view.changes()
            duplicate.insert("Trip", MigrationTests.trip("Oslo", "Norway", "2026-07-01", "2026-07-02"))
            #expect(await modelError { try await view.save(duplicate) }?.code == .uniqueConstraint)
            #expect(await modelError { try await migration.apply(schema: Self.middle) }?.code == .invalidArgument)
            try await migration.commit()
            #expect(try await store.values("Trip", key: "name", sort: ["name"]) == ["Kyoto", "Oslo", "Paris", "Rome"])
        }
    }
}
