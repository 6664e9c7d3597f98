#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// modeld killed with SIGKILL during migrations of 100,000 objects: every time, the store opens
/// at exactly one of the two versions, with every object and value intact, and the file is
/// sound. The migrations go back and forth between a schema and one with an attribute renamed,
/// an attribute with a default and an index added (inferred), so each kill lands in one
/// direction or the other. The staged test does the same through a migration session whose
/// custom part rewrites 2,000 objects after the step: a kill never leaves the step without it.
/// `MODELD_MIGRATION_KILLS` sets the number of kills (20 here).
@Suite struct MigrationCrashTests {
    static let objects = 100_000
    static var kills: Int { ProcessInfo.processInfo.environment["MODELD_MIGRATION_KILLS"].flatMap(Int.init) ?? 20 }

    static let before = Schema(entities: [
        EntityDescription(
            name: "Entry",
            attributes: [
                AttributeDescription(name: "serial", type: .int),
                // `originalName`: the way back renames `title` to `label` again.
                AttributeDescription(name: "label", type: .string, originalName: "title"),
            ], indexes: [["serial"]])
    ])
    static var after: Schema {
        var schema = before
        schema.entities[0].attributes[1].name = "title"
        schema.entities[0].attributes[1].originalName = "label"
        schema.entities[0].attributes.append(AttributeDescription(name: "rank", type: .int, defaultValue: .int(7)))
        schema.entities[0].indexes.append(["rank"])
        return schema
    }

    @Test func aKilledMigrationLeavesOneVersionOrTheOther() async throws {
        let answered = Shared(0)
        try await Self.killDuringMigrations(
            "migration", samples: [0, 4242, 99999],
            migrate: { schema, socketPath in
                let application = try await DaemonClient.withClient(socketPath: socketPath) {
                    try await $0.migrateSchema(of: "m", to: schema, allowDataLoss: true)
                }
                if application.migrationApplied { answered.update { $0 += 1 } }
            },
            check: { _, index, sample in
                if index == 1 { #expect(sample.allSatisfy { $0["rank"] == .int(7) }) }
            },
            summary: { "\(answered.value) migrations answered before their kill" })
    }

    /// The store `m` with the objects, at `before`.
    static func load(_ daemon: ModeldProcess) async throws {
        try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
            try await client.createStore("m", schema: Self.before)
            for start in stride(from: 0, to: Self.objects, by: 20_000) {
                try await client.apply(
                    (start..<(start + 20_000)).map { i in
                        .insert(
                            entity: "Entry", attributes: ["serial": .int(Int64(i)), "label": .string("e\(i)")],
                            relationships: [:], id: nil)
                    }, in: "m")
            }
        }
    }

    /// How many objects the staged migration's custom part rewrites.
    static let rewritten = 2_000

    /// A staged migration to `schema`: the step, then (going to `after`) rank 9 for the first
    /// objects, saved in the migration session, then the commit.
    static func stagedMigration(to schema: Schema, socketPath: String) async throws {
        try await DaemonClient.withClient(socketPath: socketPath) { client in
            let migration = try await client.beginMigration(of: "m", author: "kill test")
            try await migration.step(to: schema, allowDataLoss: true)
            if schema.entities[0].attributes.contains(where: { $0.name == "rank" }) {
                let first = try await migration.session.fetch(
                    FetchDescriptor(
                        entityName: "Entry", predicate: try PredicateParser.parse("serial < \(rewritten)"),
                        resultType: .identifiers))
                try await migration.session.stage(
                    first.identifiers.map { .update($0, attributes: ["rank": .int(9)], relationships: [:]) })
                try await migration.session.save()
            }
            try await migration.commit()
        }
    }

    @Test func aKilledStagedMigrationLeavesOneVersionOrTheOther() async throws {
        try await Self.killDuringMigrations(
            "staged migration", samples: [0, 1999, 4242, 99999],
            migrate: { schema, socketPath in try await Self.stagedMigration(to: schema, socketPath: socketPath) },
            check: { client, index, sample in
                guard index == 1 else { return }
                // The step and the custom part together, or neither.
                #expect(sample.map { $0["rank"] } == [.int(9), .int(9), .int(7), .int(7)])
                let rewritten = try await client.count(
                    FetchDescriptor(entityName: "Entry", predicate: try PredicateParser.parse("rank == 9")), in: "m")
                #expect(rewritten == Self.rewritten)
            })
    }

    /// Loads the store, times one uninterrupted `migrate` each way, then `kills` times starts
    /// `migrate` to the other version and kills the daemon at a random moment within that time
    /// and a half. After each restart the store is at one of the two versions with every
    /// object, the `samples` (serials) keep their labels, and `check` looks further (it gets
    /// the version's index, 0 for `before`, and the samples by serial). Prints the figures.
    static func killDuringMigrations(
        _ kind: String, samples: [Int],
        migrate: @escaping @Sendable (Schema, String) async throws -> Void,
        check: (DaemonClient, Int, [ObjectSnapshot]) async throws -> Void,
        summary: () -> String = { "" }
    ) async throws {
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""])
        do {
            try await Self.load(daemon)
            let versions = [try #require(Self.before.versionHash), try #require(Self.after.versionHash)]
            let schemas = [Self.before, Self.after]
            // How long each direction takes, uninterrupted and with a connection of its own as
            // below: the kills fall within that time and a half.
            var took: [Duration] = [.zero, .zero]
            for target in [1, 0] {
                let start = ContinuousClock.now
                try await migrate(schemas[target], daemon.socketPath)
                took[target] = ContinuousClock.now - start
            }
            var random = SystemRandomNumberGenerator()
            var stayed = 0, moved = 0
            for _ in 0..<Self.kills {
                let current = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                    try await $0.store("m").schemaVersionHash
                }
                let from = try #require(versions.firstIndex(of: current)), target = 1 - from
                // The migration runs; the kill comes at a random moment of it.
                let socketPath = daemon.socketPath
                let migration = Task { try await migrate(schemas[target], socketPath) }
                let window = max(Int(took[target] * 1.5 / .milliseconds(1)), 20)
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...window, using: &random)))
                try await daemon.kill()
                _ = try? await migration.value
                try await daemon.restart()
                try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                    let version = try await client.store("m").schemaVersionHash
                    let index = try #require(
                        versions.firstIndex(of: version), "the store is at neither version: \(version)")
                    if index == from { stayed += 1 } else { moved += 1 }
                    #expect(try await client.count(FetchDescriptor(entityName: "Entry"), in: "m") == Self.objects)
                    let sample = try await client.fetch(
                        FetchDescriptor(
                            entityName: "Entry",
                            predicate: try PredicateParser.parse(
                                "serial IN {\(samples.map(String.init).joined(separator: ", "))}"),
                            sortBy: [SortDescriptor(PropertyPath(["serial"]))]), in: "m"
                    ).objects
                    let name = index == 0 ? "label" : "title"
                    #expect(sample.map { $0[name] } == samples.map { .string("e\($0)") })
                    try await check(client, index, sample)
                }
            }
            let extra = summary()
            print(
                "\(kind) crashes of \(Self.objects) objects (uninterrupted: \(took[1]) forward, \(took[0]) back): \(Self.kills) kills, the store stayed at its version \(stayed) times and moved to the new one \(moved) times\(extra.isEmpty ? "" : "; " + extra)"
            )
            #expect(stayed + moved == Self.kills)
            #expect(try await daemon.stopAndCheckIntegrity(ofStore: "m") == ["ok"])
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await daemon.remove()
    }
}
