import ModelCore

/// A staged migration under way (SwiftData's `SchemaMigrationPlan`, run as one unit): the store
/// inside one write transaction. As a ``StorageBackend`` it reads and saves under the schema of
/// the current stage; ``StorageBackend/migrate(to:options:)`` moves it one step, by inference,
/// recording the step in history; ``commit()`` makes every stage durable at once, and
/// ``rollback()`` (or ``close()``, or a crash) leaves the store as it was before the migration.
///
/// `apply(schema:)` and `deleteHistory(before:)` are refused inside a migration (`invalidArgument`):
/// a step is a migration, and history is trimmed once the migration is over.
public protocol StagedMigration: StorageBackend {
    /// Makes every stage durable, in one commit; the migration is over. The store the migration
    /// began on has the last step's schema from then on.
    func commit() async throws

    /// Discards every stage; the store is as it was before the migration began. Does nothing
    /// once the migration is over.
    func rollback() async
}

extension StagedMigration {
    /// Refused: inside a migration the schema changes by a step.
    public func apply(schema: Schema) async throws {
        throw ModelError(
            .invalidArgument, "inside a staged migration the schema changes by a step (migrate), not by apply")
    }

    /// Refused: one migration at a time.
    public func beginStagedMigration(author: String?) async throws -> any StagedMigration {
        throw ModelError(.invalidArgument, "a staged migration is under way on \(location) already")
    }

    /// Refused: history is trimmed once the migration is over.
    public func deleteHistory(before token: HistoryToken) async throws {
        throw ModelError(
            .invalidArgument, "history is not deleted inside a staged migration; trim it once the migration is over")
    }

    /// Rolls the migration back.
    public func close() async {
        await rollback()
    }
}

extension ModelError {
    /// What a store's other writers hear while a staged migration holds it.
    public static func migrating(_ location: StoreLocation) -> ModelError {
        ModelError(
            .unavailable,
            "the store \(location) is in a staged migration; try again once it has committed or rolled back",
            context: ["store": location.description])
    }

}
