import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// Staged migrations over the socket (BeginMigration, StepMigration, CommitMigration): a
/// migration session reads and saves between steps inside one transaction; everyone else on
/// the store hears UNAVAILABLE meanwhile; the commit moves the store at once, a close (or the
/// idle timeout) leaves it as it was.
@Suite struct StagedMigrationSessionTests {
    /// Trip gains `country` in the middle version and loses `destination` in the last.
    static var middle: Schema {
        var schema = SampleTrips.schema
        schema.entities[0].attributes.append(AttributeDescription(name: "country", type: .string, isOptional: true))
        return schema
    }
    static var last: Schema {
        var schema = middle
        schema.entities[0].attributes.removeAll { $0.name == "destination" }
        return schema
    }

    @Test(arguments: [StoreInfo.Kind.sqlite, .memory])
    func stagesCommitAsOneUnit(_ kind: StoreInfo.Kind) async throws {
        try await withTestStore(schema: SampleTrips.schema, kind: kind) { store in
            _ = try await store.insert(
                "Trip",
                [
                    trip("Kyoto", "2026-04-01", "2026-04-09", destination: "Japan"),
                    trip("Rome", "2026-05-01", "2026-05-03", destination: "Italy"),
                ])
            let bystander = try await store.openSession()
            let migration = try await store.client.beginMigration(of: store.name, author: "planner")

            // Everyone else waits for the migration: told so, with UNAVAILABLE.
            let busy = await expectError(.unavailable) {
                _ = try await store.client.count(FetchDescriptor(entityName: "Trip"), in: store.name)
            }
            #expect(busy?.message.contains("store '\(store.name)' is migrating") == true, "\(String(describing: busy))")
            await expectError(.unavailable) { _ = try await bystander.count(FetchDescriptor(entityName: "Trip")) }
            await expectError(.unavailable) { _ = try await store.client.beginMigration(of: store.name) }
            await expectError(.unavailable) { try await store.client.applySchema(Self.middle, to: store.name) }
            await expectError(.unavailable) { try await store.client.dropStore(store.name, force: true) }
            // Describing the store still works: as it was. So does backing it up, as it was.
            #expect(try await store.client.store(store.name).schemaVersionHash == SampleTrips.schema.versionHash)
            if kind == .sqlite {
                let backup = try await store.client.backupStore(store.name) { _ in }
                #expect(backup.schemaVersionHash == SampleTrips.schema.versionHash)
            }

            // willMigrate: the old schema's values.
            let session = migration.session
            let old = try await session.fetch(FetchDescriptor(entityName: "Trip", sortBy: [SortDescriptor("name")]))
            #expect(old.objects.map { $0["destination"].textForm } == ["Japan", "Italy"])
            let step = try await migration.step(to: Self.middle)
            #expect(step.steps.map(\.kind) == [.addAttribute] && step.toVersion == Self.middle.versionHash)
            // didMigrate: fill the new attribute from the old one.
            for object in old.objects {
                try await session.update(
                    object.id, attributes: ["country": .string("in " + (object["destination"].textForm ?? ""))])
            }
            let unsaved = await expectError(.inUse) { try await migration.step(to: Self.last, allowDataLoss: true) }
            #expect(unsaved?.message.contains("unsaved changes") == true, "\(String(describing: unsaved))")
            try await session.save()
            await expectError(.schemaMismatch) { try await migration.step(to: Self.last) }
            try await migration.step(to: Self.last, allowDataLoss: true)
            let info = try await migration.commit()
            #expect(info.schemaVersionHash == Self.last.versionHash)

            #expect(try await store.values("Trip", key: "country", sort: ["name"]) == ["in Japan", "in Italy"])
            let stale = await expectError(.schemaMismatch) {
                _ = try await bystander.count(FetchDescriptor(entityName: "Trip"))
            }
            #expect(stale?.message.contains("migrated to schema version") == true, "\(String(describing: stale))")
            await expectError(.notFound) { _ = try await session.count(FetchDescriptor(entityName: "Trip")) }
            let history = try await store.client.history(after: nil, in: store.name)
            #expect(history.compactMap(\.schemaChange).map(\.to) == [Self.middle.versionHash, Self.last.versionHash])
            #expect(history.filter { $0.schemaChange != nil }.allSatisfy { $0.author == "planner" })
        }
    }

    @Test func aClosedMigrationLeavesTheStoreAsItWas() async throws {
        try await withTestStore(schema: SampleTrips.schema) { store in
            _ = try await store.insert("Trip", [trip("Kyoto", "2026-04-01", "2026-04-09")])
            let before = try await store.client.store(store.name)
            let migration = try await store.client.beginMigration(of: store.name)
            try await migration.step(to: Self.middle)
            _ = try await migration.session.insert("Trip", attributes: trip("Rome", "2026-05-01", "2026-05-03"))
            try await migration.session.save()
            try await migration.rollback()
            let after = try await store.client.store(store.name)
            #expect(after.schemaVersionHash == before.schemaVersionHash && after.historyToken == before.historyToken)
            #expect(try await store.values("Trip", key: "name") == ["Kyoto"])
            _ = try await store.insert("Trip", [trip("Oslo", "2026-06-01", "2026-06-03")])
            // A session that is not a migration's cannot step.
            let plain = try await store.openSession()
            let error = await expectError(.invalidArgument) {
                _ = try await RemoteMigration.stepping(plain, to: Self.middle)
            }
            #expect(error?.message.contains("not a migration session") == true, "\(String(describing: error))")
        }
    }

    /// A migration that only saves keeps the schema, and so the store's watches: they hear
    /// what it saved once it commits.
    @Test(arguments: [StoreInfo.Kind.sqlite, .memory])
    func aCommitWithoutAStepReachesTheWatches(_ kind: StoreInfo.Kind) async throws {
        try await withTestStore(schema: SampleTrips.schema, kind: kind) { store in
            _ = try await store.insert("Trip", [trip("Kyoto", "2026-04-01", "2026-04-09")])
            let count = WatchFeed(store.client, .count(FetchDescriptor(entityName: "Trip")), store: store.name)
            #expect(try await count.next().result == .count(1))
            let migration = try await store.client.beginMigration(of: store.name)
            _ = try await migration.session.insert("Trip", attributes: trip("Rome", "2026-05-01", "2026-05-03"))
            try await migration.session.save()
            let committed = try await migration.commit()
            let update = try await count.next()
            #expect(update.result == .count(2))
            #expect(update.token == committed.historyToken)
        }
    }

    /// A migration whose client goes quiet is rolled back after the migration idle timeout,
    /// and the store serves again.
    @Test func anAbandonedMigrationIsRolledBack() async throws {
        try await TestDaemon.withDaemon(configure: { $0.migrationIdleTimeout = .seconds(3) }) { daemon in
            try await withStore(on: daemon, schema: SampleTrips.schema) { store in
                _ = try await store.insert("Trip", [trip("Kyoto", "2026-04-01", "2026-04-09")])
                let migration = try await store.client.beginMigration(of: store.name)
                do {
                    try await migration.step(to: Self.middle)
                } catch let error as ModelError where error.code == .notFound {
                    // On a loaded machine the migration may have expired before its step: what
                    // follows checks the rollback all the same.
                }
                // The store answers again once the daemon has ended the quiet migration.
                let deadline = ContinuousClock.now + .seconds(30)
                var count: Int?
                while count == nil, ContinuousClock.now < deadline {
                    do {
                        count = try await store.client.count(FetchDescriptor(entityName: "Trip"), in: store.name)
                    } catch let error as ModelError where error.code == .unavailable {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
                #expect(count == 1)
                #expect(try await store.client.store(store.name).schemaVersionHash == SampleTrips.schema.versionHash)
                let late = await expectError(.notFound) { try await migration.step(to: Self.last) }
                #expect(late?.message.contains("expired after 3 s") == true, "\(String(describing: late))")
            }
        }
    }
}

extension RemoteMigration {
    /// A step asked of `session`, whatever it is (for testing the daemon's refusal).
    static func stepping(_ session: RemoteSession, to schema: Schema) async throws -> MigrationPlan {
        try await RemoteMigration(session: session).step(to: schema)
    }
}
