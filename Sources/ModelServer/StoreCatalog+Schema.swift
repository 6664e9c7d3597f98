import Foundation
import ModelCore
import ModelEngine
import ModelStorage
import Synchronization

/// Changing a store's schema: set, migrated, staged, or found changed by another process.
extension StoreCatalog {
    /// Sets a store's schema (see `StorageBackend.apply(schema:)`) and returns its handle, whose
    /// container now has the new schema.
    func apply(schema: Schema, to name: String) async throws -> StoreHandle {
        try await changes.withPermit {
            let handle = try handle(named: name)
            try handle.checkAvailable()
            let backend = handle.container.backend
            try await backend.apply(schema: schema)
            handle.replace(try await ModelContainer.open(backend: backend))
            return handle
        }
    }

    /// Migrates a store to `schema` (``StorageBackend/migrate(to:options:)``); unless it was a
    /// dry run or nothing changed, the handle gets a container of the new schema. `beforeChange`
    /// runs once the plan is known to be allowed, before the store changes (the daemon ends the
    /// store's sessions there).
    func migrate(
        _ name: String, to schema: Schema, options: MigrationOptions, beforeChange: (MigrationPlan) async -> Void
    ) async throws -> (StoreHandle, MigrationPlan) {
        try await changes.withPermit {
            let handle = try handle(named: name)
            try handle.checkAvailable()
            let backend = handle.container.backend
            var dryRun = options
            dryRun.dryRun = true
            let preview = try await backend.migrate(to: schema, options: dryRun)
            if options.dryRun { return (handle, preview) }
            guard preview.isAllowed else { throw preview.refusalError }
            if !preview.isEmpty { await beforeChange(preview) }
            let plan = try await backend.migrate(to: schema, options: options)
            handle.replace(try await ModelContainer.open(backend: backend))
            return (handle, plan)
        }
    }

    /// Begins a staged migration of `handle`'s store (``StorageBackend/beginStagedMigration(author:)``);
    /// `open` makes its session (a failure rolls the migration back), and the store is marked as
    /// held by that session until it ends.
    func beginMigration(
        of handle: StoreHandle, author: String?, open: (any StagedMigration, ModelContainer) throws -> Session
    ) async throws -> Session {
        try await changes.withPermit {
            try handle.checkAvailable()
            let migration = try await handle.container.backend.beginStagedMigration(author: author)
            do {
                let container = try await ModelContainer.open(backend: migration)
                let session = try open(migration, container)
                guard
                    handle.beginMigration(
                        by: session.id,
                        fromVersion: container.schema.entityNames.isEmpty ? "" : container.schema.versionHash)
                else { throw ModelError.migrating(handle.location) }
                return session
            } catch {
                await migration.rollback()
                throw error
            }
        }
    }

    /// Commits the staged migration `migration` of `handle`'s store; the handle gets a
    /// container of the store's new schema.
    func commitMigration(_ migration: any StagedMigration, of handle: StoreHandle) async throws {
        try await changes.withPermit {
            try await migration.commit()
            handle.replace(try await ModelContainer.open(backend: handle.container.backend))
        }
    }

    /// Reads the schema the store `name` holds now, for when another process may have migrated
    /// it: when it differs from the one served, `beforeChange` runs (the daemon ends the store's
    /// sessions) and the store is served with the new one. Whether it changed.
    func refreshSchema(of handle: StoreHandle, beforeChange: (_ from: String, _ to: String) async -> Void)
        async throws -> Bool
    {
        try await changes.withPermit {
            guard stores.withLock({ $0[handle.name] }) === handle else { return false }
            try handle.checkAvailable()
            let served = handle.container.schema.versionHash
            let stored = try await handle.container.backend.reloadSchema()
            guard stored.versionHash != served else { return false }
            await beforeChange(served, stored.versionHash)
            handle.replace(try await ModelContainer.open(backend: handle.container.backend))
            return true
        }
    }
}
