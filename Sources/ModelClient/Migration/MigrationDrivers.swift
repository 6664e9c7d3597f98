import ModelCore
import ModelEngine
import ModelRemote
import ModelStorage
import Synchronization

/// A staged migration on the daemon: its migration session (BeginMigration), whose context
/// the daemon moves to each new schema.
final class DaemonMigrationDriver: MigrationDriver {
    let migration: RemoteMigration
    let client: DaemonClient
    let store: String

    init(migration: RemoteMigration, client: DaemonClient, store: String) {
        self.migration = migration
        self.client = client
        self.store = store
    }

    var storeIdentifier: UUID { migration.session.storeIdentifier }

    func contextConnection() async throws -> any ContextConnection {
        DaemonSession(session: migration.session, client: client, store: store, owner: nil)
    }

    func step(to schema: ModelCore.Schema, allowDataLoss: Bool) async throws {
        try await migration.step(to: schema, allowDataLoss: allowDataLoss)
    }

    func commit() async throws {
        try await migration.commit()
    }

    func rollback() async {
        _ = try? await migration.rollback()
    }
}

/// A staged migration in-process: the backend's ``StagedMigration``, with an engine context of
/// the current stage's schema.
final class EmbeddedMigrationDriver: MigrationDriver {
    let migration: any StagedMigration

    init(migration: any StagedMigration) {
        self.migration = migration
    }

    var storeIdentifier: UUID { migration.storeIdentifier }

    func contextConnection() async throws -> any ContextConnection {
        let container = try await ModelEngine.ModelContainer.open(backend: migration)
        return EngineContext(context: container.makeContext(), container: container, watches: nil, saves: nil)
    }

    func step(to schema: ModelCore.Schema, allowDataLoss: Bool) async throws {
        _ = try await migration.migrate(to: schema, options: MigrationOptions(allowDataLoss: allowDataLoss))
    }

    func commit() async throws {
        try await migration.commit()
    }

    func rollback() async {
        await migration.rollback()
    }
}
