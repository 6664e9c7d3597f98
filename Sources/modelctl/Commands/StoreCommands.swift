import ArgumentParser
import Foundation
import ModelRemote
import ModelCore

/// `modelctl store list|create|drop|info|backup|restore|retention|grant|revoke`.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store", abstract: "List, create, drop, describe, back up and restore stores.",
        subcommands: [
            List.self, Create.self, Drop.self, Info.self, Backup.self, Restore.self, Retention.self, Grant.self,
            Revoke.self,
        ])

    static func record(_ store: StoreInfo) -> Record {
        [
            ("name", .text(store.name)), ("uuid", .text(store.storeIdentifier.uuidString.lowercased())),
            ("kind", .text(store.kind.rawValue)),
            ("backend", .text(store.backend)), ("url", .text(store.url.isEmpty ? nil : store.url)),
            ("entities", .uris(store.entities)),
            ("schema_version_hash", .text(store.schemaVersionHash.isEmpty ? nil : store.schemaVersionHash)),
            ("history_token", .number(store.historyToken?.rawValue)),
            ("open_sessions", .number(Int64(store.openSessions))),
            ("path", .text(store.path)),
            ("owner", .text(store.owner)), ("grants", .uris(grantsText(store))),
            ("unavailable", .text(store.unavailable)),
        ] + retentionRecord(store).dropFirst() // its fields without the store's name again
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the stores.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let stores = try await global.withClient { try await $0.stores() }
            let writer = RecordWriter(format: global.outputFormat)
            writer.write(stores.map(StoreCommand.record))
            writer.finish()
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Create a store (an SQLite file in the daemon's data directory, in memory, or at a backend's URL).",
            discussion:
                "With --url the store lives at that URL (its scheme chooses the backend); one that exists there is attached."
        )
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store's name: 1 to 64 characters of a-z, 0-9, _ and -.") var name: String
        @Flag(help: "Keep the store in memory only (gone when the daemon stops).") var memory = false
        @Option(
            help: ArgumentHelp(
                "The backend, by URL scheme (sqlite, memory, or another the daemon has); the daemon places the store.",
                valueName: "scheme")) var backend: String?
        @Option(help: ArgumentHelp("Where the store lives, as a backend URL.", valueName: "url")) var url: String?

        func validate() throws {
            guard [memory, backend != nil, url != nil].filter({ $0 }).count <= 1 else {
                throw ValidationError(
                    "--memory, --backend and --url each choose where the store lives: give one of them")
            }
        }
        @Option(help: ArgumentHelp("A schema to apply at once (JSON, as 'schema show' prints it).", valueName: "file"))
        var schema: String?

        func run() async throws {
            let schema = try await CLI.reportingErrors(socket: global.socketPath) {
                try self.schema.map(SchemaCommand.read)
            }
            let backend = memory ? "memory" : self.backend
            let store = try await global.withClient {
                try await $0.createStore(name, backend: backend, url: url, schema: schema)
            }
            let writer = RecordWriter(format: global.outputFormat, single: true)
            writer.write([StoreCommand.record(store)])
            writer.finish()
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop a store and delete its data.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store to drop.") var name: String
        @Flag(help: "Close the store's open sessions (discarding what they did not save) rather than refuse.")
        var force = false

        func run() async throws {
            let closed = try await global.withClient { try await $0.dropStore(name, force: force) }
            Terminal.error("dropped store '\(name)'\(closed > 0 ? ", closing \(closed) session(s)" : "")\n")
        }
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Describe a store (the --store one by default).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store (default: --store).") var name: String?

        func run() async throws {
            let store = try await global.withClient { try await $0.store(name ?? global.storeName) }
            let writer = RecordWriter(format: global.outputFormat, single: true)
            writer.write([StoreCommand.record(store)])
            writer.finish()
        }
    }
}
