import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// ApplySchema on a store with objects, over a real socket: migrations, dry runs, refusals, and
/// what sessions and history followers hear.
@Suite struct SchemaMigrationTests {
    static var budgeted: Schema {
        var schema = SampleTrips.schema
        schema.entities[0].attributes.append(AttributeDescription(name: "budget", type: .double, isOptional: true))
        return schema
    }

    /// A session opened before the migration is closed by it: its staged insert is discarded,
    /// and its next call hears FAILED_PRECONDITION naming the new version.
    @Test func sessionsHearThatTheirStoreMigrated() async throws {
        try await withTestStore(schema: SampleTrips.schema) { store in
            _ = try await store.insert("Trip", [trip("Kyoto", "2026-04-01", "2026-04-09")])
            let session = try await store.openSession()
            _ = try await session.insert("Trip", attributes: trip("Oslo", "2026-05-01", "2026-05-03"))
            let migrated = try await store.client.migrateSchema(of: store.name, to: Self.budgeted, author: "ops")
            #expect(migrated.migrationApplied && migrated.store.openSessions == 0)
            let late = await expectError(.schemaMismatch) { _ = try await session.save() }
            let version = String(try #require(Self.budgeted.versionHash).prefix(12))
            #expect(
                late?.message.contains("its store '\(store.name)' migrated to schema version \(version)") == true,
                "\(String(describing: late))")
            #expect(try await store.values("Trip", key: "name") == ["Kyoto"], "the staged insert was not saved")
            // A new session works with the new schema.
            let fresh = try await store.openSession()
            _ = try await fresh.insert(
                "Trip",
                attributes: trip("Oslo", "2026-05-01", "2026-05-03").merging(["budget": .double(800)]) { a, _ in a })
            try await fresh.save()
            #expect(try await store.values("Trip", "budget > 100", key: "name") == ["Oslo"])
        }
    }

    /// A store without a schema takes its first as it is, and answers with what it made as a
    /// plan applied from no schema (""), as its dry run does (the answer once had no plan, so
    /// `applied` read false though the store changed).
    @Test func aFirstSchemaIsAnsweredAsAnAppliedPlan() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                _ = try await client.createStore("blank")
                let planned = try await client.migrateSchema(of: "blank", to: SampleTrips.schema, dryRun: true)
                #expect(planned.migration?.fromVersion == "" && !planned.migrationApplied)
                #expect(try await client.store("blank").schemaVersionHash.isEmpty)
                let applied = try await client.migrateSchema(of: "blank", to: SampleTrips.schema)
                let plan = try #require(applied.migration)
                #expect(applied.migrationApplied, "\(applied)")
                #expect(plan.fromVersion == "" && plan.toVersion == SampleTrips.schema.versionHash)
                #expect(!plan.steps.isEmpty && plan.steps.allSatisfy { $0.kind == .addEntity }, "\(plan.steps)")
                #expect(applied.store.schemaVersionHash == SampleTrips.schema.versionHash)
            }
        }
    }

    /// A dry run answers with the plan and changes nothing; a refusal changes nothing and
    /// leaves the sessions open.
    @Test func dryRunsAndRefusalsChangeNothing() async throws {
        try await withTestStore(schema: SampleTrips.schema) { store in
            _ = try await store.insert(
                "Trip", [trip("Kyoto", "2026-04-01", "2026-04-09"), trip("Rome", "2026-05-01", "2026-05-03")])
            let before = try await store.client.store(store.name)
            let session = try await store.openSession()
            let planned = try await store.client.migrateSchema(of: store.name, to: Self.budgeted, dryRun: true)
            let plan = try #require(planned.migration)
            #expect(!planned.migrationApplied && plan.isAllowed)
            #expect(plan.steps.map(\.kind) == [.addAttribute] && plan.steps.map(\.objects) == [2])
            #expect(plan.fromVersion == before.schemaVersionHash && plan.toVersion == Self.budgeted.versionHash)
            let after = try await store.client.store(store.name)
            #expect(after.schemaVersionHash == before.schemaVersionHash && after.historyToken == before.historyToken)
            #expect(after.openSessions == 1)

            var lossy = SampleTrips.schema
            lossy.entities[0].attributes.removeAll { $0.name == "destination" }
            let refused = await expectError(.schemaMismatch) {
                try await store.client.applySchema(lossy, to: store.name)
            }
            #expect(
                refused?.message.contains("remove destination: its values are deleted (2 object(s)); allow data loss")
                    == true,
                "\(String(describing: refused))")
            #expect(try await store.client.store(store.name).openSessions == 1, "a refusal closes no session")
            #expect(try await session.count(FetchDescriptor(entityName: "Trip")) == 2)
            let lost = try await store.client.migrateSchema(of: store.name, to: lossy, allowDataLoss: true)
            #expect(lost.migrationApplied && lost.migration?.dataLoss.map(\.kind) == [.removeAttribute])
        }
    }

    /// A history follower hears the migration as a transaction with its schema change.
    @Test func followersSeeTheSchemaChange() async throws {
        try await withTestStore(schema: SampleTrips.schema) { store in
            _ = try await store.insert("Trip", [trip("Kyoto", "2026-04-01", "2026-04-09")])
            let seen = Shared<[HistoryTransaction]>([])
            let migration = TestEvent()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await store.client.followHistory(after: nil, in: store.name) { transaction in
                        seen.update { $0.append(transaction) }
                        if transaction.schemaChange != nil { migration.signal() }
                    }
                }
                try await store.client.migrateSchema(of: store.name, to: Self.budgeted, author: "ops")
                #expect(await migration.wait(), "the follower never saw the migration")
                group.cancelAll()
            }
            let last = try #require(seen.value.last)
            #expect(last.author == "ops" && last.changes.isEmpty)
            #expect(last.schemaChange?.from == SampleTrips.schema.versionHash)
            #expect(last.schemaChange?.to == Self.budgeted.versionHash)
        }
    }

    /// After a rename, every call that names an object by its old URI is told the new name.
    @Test func oldEntityURIsAreToldOfTheRename() async throws {
        let text = [AttributeDescription(name: "text", type: .string)]
        let notes = Schema(entities: [EntityDescription(name: "Note", attributes: text)])
        let memos = Schema(entities: [EntityDescription(name: "Memo", attributes: text, originalName: "Note")])
        try await withTestStore(schema: notes) { store in
            let old = try #require(try await store.insert("Note", [["text": .string("hi")]]).first)
            _ = try await store.client.migrateSchema(of: store.name, to: memos)
            let session = try await store.openSession()
            let calls: [(String, () async throws -> Void)] = [
                ("GetObjects", { _ = try await store.client.objects([old], in: store.name) }),
                (
                    "Apply update",
                    {
                        _ = try await store.client.apply(
                            [.update(old, attributes: ["text": .string("x")], relationships: [:])], in: store.name)
                    }
                ),
                ("Apply delete", { _ = try await store.client.apply([.delete(old)], in: store.name) }),
                ("session read", { _ = try await session.objects([old]) }),
                ("session stage", { try await session.delete(old) }),
            ]
            for (call, body) in calls {
                let error = await expectError(.unknownEntity) { try await body() }
                #expect(
                    error?.message.contains("entity 'Note' was renamed to 'Memo' by a migration") == true,
                    "\(call): \(String(describing: error))")
            }
            #expect(try await store.values("Memo", key: "text") == ["hi"])
        }
    }
}
