import ModelCore
import ModelStorage

extension SQLiteStore {
    /// Saves atomically in a `BEGIN IMMEDIATE` transaction on the writer (waiting for another
    /// process's write to finish), durably (`synchronous=FULL`) before returning; saves waiting
    /// together share one transaction and one sync, each in a savepoint (``SaveBatcher``). See
    /// ``SaveOperation`` for the steps; identifiers are checked before the save waits for the
    /// writer. An empty change set writes nothing and returns no token.
    public func save(_ changes: ChangeSet) async throws -> SaveResult {
        let layout = try await layout()
        guard !changes.isEmpty else { return SaveResult() }
        try ChangeSetPlan.checkIdentifiers(changes, schema: layout.schema, storeIdentifier: storeIdentifier)
        let storeIdentifier = storeIdentifier
        return try await saves.save { connection in
            try SaveOperation(
                connection: connection, layout: layout, storeIdentifier: storeIdentifier, changes: changes
            ).run()
        }
    }
}
