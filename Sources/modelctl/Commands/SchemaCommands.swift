import ArgumentParser
import Foundation
import ModelCore
import ModelRemote

/// `modelctl schema show|apply|diff|log`.
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Show a store's schema, apply one (migrating the data), or compare one.",
        subcommands: [Show.self, Apply.self, Diff.self, Log.self])

    /// A schema from a JSON file ('-' for standard input).
    static func read(_ path: String) throws -> Schema {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard !path.isEmpty, let read = FileManager.default.contents(atPath: path) else {
                throw FileError.cannotRead(path)
            }
            data = read
        }
        do {
            let schema = try Schema(json: String(decoding: data, as: UTF8.self))
            try schema.validate()
            return schema
        } catch {
            throw InputError("\(path): \(error.message)")
        }
    }

    /// A migration plan as records: one per step, then one per refusal.
    static func records(_ plan: MigrationPlan) -> [Record] {
        plan.steps.map { step in
            [
                ("entity", .text(step.entity)), ("step", .text(step.kind.rawValue)),
                ("objects", .number(Int64(step.objects))),
                ("losesData", .value(.bool(step.losesData))), ("detail", .text(step.detail)),
            ]
        }
            + plan.refusals.map { refusal in
                [
                    ("entity", .text(nil)), ("step", .text("refused")), ("objects", .number(nil)),
                    ("losesData", .text(nil)),
                    ("detail", .text(refusal)),
                ]
            }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the store's schema as JSON (the form 'schema apply' reads).")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let schema = try await global.withClient { try await $0.schema(of: global.storeName) }
            Terminal.write(schema.canonicalJSON() + "\n")
        }
    }

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply a schema (JSON) to the store, migrating its data.",
            discussion: """
                A store without a schema takes any. A store with one migrates by itself where the change \
                can be inferred: entities and attributes added or removed, renamed through originalName, \
                made optional or required (with a default for the objects holding nil), indexes and \
                unique constraints added or removed, relationships added, removed or given new rules — \
                each checked against the data, all in one transaction recorded in history. What cannot \
                be inferred (a type change, say) is refused, saying why. Removing what holds data needs \
                --allow-data-loss. The store's open sessions are closed when it migrates. \
                See 'schema diff' for the plan without applying it. A change that needs code (filling \
                a new required attribute from old values, converting a value) needs a staged migration: \
                a SchemaMigrationPlan in ModelClient, or BeginMigration/StepMigration/CommitMigration \
                over gRPC (docs/migrations.md).
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The schema's JSON file ('-' for standard input).") var file: String
        @Flag(help: "Print the migration plan and change nothing (exits with 75 when it would be refused).")
        var dryRun = false
        @Flag(help: "Carry out steps that delete stored values (removing an attribute or entity with data).")
        var allowDataLoss = false
        @Option(help: "The author of the migration's history transaction.") var author: String?

        func run() async throws {
            let schema = try await CLI.reportingErrors(socket: global.socketPath) { try SchemaCommand.read(file) }
            let applied = try await global.withClient {
                try await $0.migrateSchema(
                    of: global.storeName, to: schema, dryRun: dryRun, allowDataLoss: allowDataLoss, author: author)
            }
            let store = applied.store
            // A store's first schema (from version "") is applied as it is: no migration to show.
            let migrated = applied.migration.flatMap { $0.fromVersion.isEmpty ? nil : $0 }
            if let plan = dryRun ? applied.migration : migrated, dryRun || !plan.steps.isEmpty {
                let writer = RecordWriter(format: global.outputFormat)
                writer.write(SchemaCommand.records(plan))
                writer.finish()
            }
            let version = store.schemaVersionHash.prefix(12)
            if dryRun {
                let verdict =
                    applied.migration.map { $0.isAllowed ? "would migrate" : "would be refused" } ?? "would apply"
                Terminal.error(
                    "dry run: '\(store.name)' \(verdict) (\(applied.migration?.steps.count ?? 0) step(s)); nothing changed\n"
                )
                // As 'schema diff': a plan that would be refused is a conflict.
                if let plan = applied.migration, !plan.isAllowed { throw ExitCode(CLI.conflict) }
            } else if applied.migrationApplied, let plan = migrated {
                Terminal.error(
                    "migrated '\(store.name)' from version \(plan.fromVersion.prefix(12)) to \(version) (\(plan.steps.count) step(s))\n"
                )
            } else {
                Terminal.error(
                    "applied the schema to '\(store.name)' (\(store.entities.count) entities, version \(version))\n")
            }
        }
    }

    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Compare a schema (JSON) with the store's: the migration plan, with what each step touches.",
            discussion:
                "The same as 'schema apply FILE --dry-run'. Exits with 0 when the store could migrate, 75 (conflict) when it would be refused."
        )
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The schema's JSON file ('-' for standard input).") var file: String
        @Flag(help: "Plan as if --allow-data-loss were given.") var allowDataLoss = false

        func run() async throws {
            let schema = try await CLI.reportingErrors(socket: global.socketPath) { try SchemaCommand.read(file) }
            let applied = try await global.withClient {
                try await $0.migrateSchema(of: global.storeName, to: schema, dryRun: true, allowDataLoss: allowDataLoss)
            }
            let plan =
                applied.migration ?? MigrationPlan(fromVersion: "", toVersion: applied.store.schemaVersionHash)
            let writer = RecordWriter(format: global.outputFormat)
            writer.write(SchemaCommand.records(plan))
            writer.finish()
            if !plan.isAllowed { throw ExitCode(CLI.conflict) }
        }
    }

    struct Log: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The schema versions the store went through: each migration, when and by whom.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let writer = RecordWriter(format: global.outputFormat)
            try await global.withClient { client in
                try await client.followHistory(after: nil, in: global.storeName, follow: false) { transaction in
                    guard let change = transaction.schemaChange else { return }
                    writer.write([
                        [
                            ("token", .number(transaction.token.rawValue)),
                            ("timestamp", .text(transaction.timestamp.iso8601)), ("author", .text(transaction.author)),
                            ("from", .text(change.from)), ("to", .text(change.to)),
                        ]
                    ])
                }
            }
            writer.finish()
        }
    }
}
