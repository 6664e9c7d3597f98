import Foundation
import ModelRemote
import ModelCore
import ModelFixtures
import ModelTesting
import Testing

/// StoreService over a real socket: creating, listing, dropping stores; their schemas.
@Suite struct StoreTests {
    @Test func createListGetAndDrop() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                let trips = try await client.createStore("trips", schema: SampleTrips.schema)
                #expect(
                    trips.kind == .sqlite && trips.entities.contains("PersonalTrip")
                        && trips.schemaVersionHash.count == 64)
                #expect(trips.path == daemon.directory.appendingPathComponent("data/stores/trips.sqlite").path)
                let scratch = try await client.createStore("scratch-1", kind: .memory)
                #expect(scratch.kind == .memory && scratch.schemaVersionHash == "" && scratch.path == nil)
                #expect(scratch.storeIdentifier != trips.storeIdentifier)
                #expect(try await client.stores().map(\.name) == ["scratch-1", "trips"])
                #expect(try await client.store("trips") == trips)

                try await client.dropStore("trips")
                #expect(!FileManager.default.fileExists(atPath: try #require(trips.path)))
                #expect(try await client.stores().map(\.name) == ["scratch-1"])
                await expectError(.notFound) { _ = try await client.store("trips") }
                // The name is free again, for a new store with a new UUID.
                #expect(try await client.createStore("trips").storeIdentifier != trips.storeIdentifier)
            }
        }
    }

    /// Store names never become paths outside the data directory.
    @Test(arguments: [
        "", "../x", "/etc", "a/b", "a\0b", "UPPER", "dot.name", "space name", "é", String(repeating: "a", count: 65),
    ])
    func badNamesAreRefused(name: String) async throws {
        let store = try await TestDaemon.shared
        try await store.withClient { client in
            let error = await expectError(.invalidArgument) { try await client.createStore(name) }
            #expect(error?.message.contains("is not a valid store name") == true, "\(String(describing: error))")
            _ = await expectError(.invalidArgument) { _ = try await client.store(name) }
        }
        let data = store.directory.appendingPathComponent("data")
        let outside = try FileManager.default.contentsOfDirectory(atPath: data.path).filter {
            $0 != "stores" && $0 != "modeld.lock"
        }
        #expect(outside.isEmpty, "\(outside)")
    }

    /// Listing while other clients drop stores never fails: a store dropped meanwhile is left out.
    @Test func listingRacesWithDropsHarmlessly() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                for i in 0..<30 { try await client.createStore("s\(i)") }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { for i in 0..<30 { try await client.dropStore("s\(i)") } }
                    group.addTask {
                        for _ in 0..<60 {
                            let names = try await client.stores().map(\.name)
                            #expect(names.allSatisfy { $0.hasPrefix("s") })
                        }
                    }
                    try await group.waitForAll()
                }
                let left = try await client.stores()
                #expect(left.isEmpty)
            }
        }
    }

    @Test func aNameCanBeTakenOnce() async throws {
        try await withTestStore { store in
            let error = await expectError(.uniqueConstraint) { try await store.client.createStore(store.name) }
            #expect(error?.message == "a store named '\(store.name)' already exists")
        }
    }

    @Test func anInvalidSchemaIsRefusedAndLeavesNoStore() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                var schema = SampleTrips.schema
                schema.entities[0].relationships[0].destination = "Nowhere"
                let error = await expectError(.invalidSchema) { try await client.createStore("broken", schema: schema) }
                #expect(error?.message.contains("Nowhere") == true, "\(String(describing: error))")
                let stores = try await client.stores()
                #expect(stores.isEmpty)
                #expect(
                    !FileManager.default.fileExists(
                        atPath: daemon.directory.appendingPathComponent("data/stores/broken.sqlite").path))
                #expect(try await client.createStore("broken").name == "broken")
            }
        }
    }

    @Test func schemasAreReadAndChangedWhileTheStoreIsEmpty() async throws {
        try await withTestStore { store in
            #expect(try await store.client.schema(of: store.name) == Schema())
            let applied = try await store.client.applySchema(Articles.schema, to: store.name)
            #expect(applied.entities.sorted() == ["Article", "ArticleCollection", "Category", "Student"])
            #expect(try await store.client.schema(of: store.name) == Articles.schema)
            // An empty store takes another schema; the same schema again is fine at any time.
            try await store.client.applySchema(SampleTrips.schema, to: store.name)
            _ = try await store.insert("Trip", [trip("Kyoto", "2026-04-01", "2026-04-09")])
            try await store.client.applySchema(SampleTrips.schema, to: store.name)

            // A store with objects migrates (docs/migrations.md); what cannot be inferred is refused.
            var changed = SampleTrips.schema
            changed.entities[0].attributes.append(
                AttributeDescription(name: "budget", type: .decimal, isOptional: true))
            let migrated = try await store.client.migrateSchema(of: store.name, to: changed)
            #expect(migrated.migrationApplied && migrated.migration?.steps.map(\.kind) == [.addAttribute])
            #expect(migrated.store.schemaVersionHash == changed.versionHash)
            #expect(try await store.values("Trip", key: "name") == ["Kyoto"])
            var retyped = changed
            retyped.entities[0].attributes[0].type = .int
            let error = await expectError(.schemaMismatch) {
                try await store.client.applySchema(retyped, to: store.name)
            }
            #expect(
                error?.message.contains("Trip.name changes type (string → int)") == true, "\(String(describing: error))"
            )
            #expect(try await store.values("Trip", key: "name") == ["Kyoto"])
        }
    }

    @Test func storesInUseAreNotPulledFromUnderTheirSessions() async throws {
        try await withTestStore(schema: SampleTrips.schema) { store in
            let session = try await store.openSession()
            _ = try await session.insert("Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"))
            let drop = await expectError(.inUse) { try await store.client.dropStore(store.name) }
            #expect(drop?.message.contains("1 open session") == true)
            #expect(try await store.client.store(store.name).openSessions == 1)

            // With force, the session is closed (its changes discarded) and tells its client why.
            #expect(try await store.client.dropStore(store.name, force: true) == 1)
            let late = await expectError(.notFound) { _ = try await session.count(FetchDescriptor(entityName: "Trip")) }
            #expect(
                late?.message.contains("its store '\(store.name)' was dropped") == true, "\(String(describing: late))")
            try await store.client.createStore(store.name) // for the harness to drop
        }
    }

    /// SQLite stores are reopened when the daemon starts again; memory stores are gone.
    @Test func storesOutliveTheDaemon() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mr")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first: (UUID, PersistentIdentifier) = try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                let info = try await client.createStore("kept", schema: SampleTrips.schema)
                try await client.createStore("fleeting", kind: .memory)
                let saved = try await client.apply(
                    [
                        .insert(
                            entity: "Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"), relationships: [:],
                            id: nil)
                    ], in: "kept")
                return (info.storeIdentifier, try #require(saved.remappedIdentifiers.values.first))
            }
        }
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                let stores = try await client.stores()
                #expect(stores.map(\.name) == ["kept"])
                #expect(stores.first?.storeIdentifier == first.0)
                #expect(try await client.objects([first.1], in: "kept").first?["name"] == .string("Kyoto"))
            }
        }
    }
}
