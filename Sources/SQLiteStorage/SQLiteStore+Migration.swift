import Foundation
import ModelCore
import ModelStorage

extension SQLiteStore {
    /// Migrates the store to `schema` (see ``StorageBackend/migrate(to:options:)``): the plan is
    /// worked out against the data inside the writer's `BEGIN IMMEDIATE` transaction, then the
    /// tables change (``RelationalMigration``), the schema is stored, and a schema-change
    /// transaction is recorded, all in that one transaction: a crash leaves the old version or
    /// the new one.
    public func migrate(to schema: Schema, options: MigrationOptions) async throws -> MigrationPlan {
        let resolved = try ResolvedSchema.resolved(schema)
        _ = try cachedLayout()
        let storeIdentifier = storeIdentifier
        let (plan, layout) = try await writer.run { connection in
            try connection.transaction(write: true) {
                try Self.migrate(connection, to: resolved, options: options, storeIdentifier: storeIdentifier)
            }
        }
        if let layout { setLayout(layout) }
        return plan
    }

    /// The migration's work inside the caller's write transaction (or savepoint): plans against
    /// the stored schema and data, then, unless it is a dry run, changes the tables, stores the
    /// schema and records the change. Returns the plan, and the new layout when the store changed.
    static func migrate(
        _ connection: SQLiteConnection, to resolved: ResolvedSchema, options: MigrationOptions, storeIdentifier: UUID
    ) throws -> (MigrationPlan, SQLiteLayout?) {
        let current = try StoreMetadata.schema(connection)
        let old = SQLiteLayout(current)
        if current.versionHash == resolved.versionHash {
            let same = MigrationPlanner.planSameShape(from: current, to: resolved)
            if options.dryRun { return (same, nil) }
            guard same.isAllowed else { throw same.refusalError }
            // The same stored shape: keep the declaration as given (order, rename hints).
            if current.schema != resolved.schema {
                try StoreMetadata.setValue(resolved.canonicalJSON, for: "schema", connection)
                return (
                    MigrationPlan(fromVersion: current.versionHash, toVersion: resolved.versionHash),
                    SQLiteLayout(resolved)
                )
            }
            return (MigrationPlan(fromVersion: current.versionHash, toVersion: resolved.versionHash), nil)
        }
        let reads = MigrationReadContext(
            context: ReadContext(
                connection: connection, layout: old, storeIdentifier: storeIdentifier, overlay: Overlay()))
        let plan = try MigrationPlanner.plan(
            from: current, to: resolved, reads: reads, allowDataLoss: options.allowDataLoss)
        if options.dryRun { return (plan, nil) }
        guard plan.isAllowed else { throw plan.refusalError }
        let new = SQLiteLayout(resolved)
        try RelationalMigration(
            old: old, new: new, changes: SchemaChanges(from: current, to: resolved),
            target: SQLiteMigrationTarget(connection: connection)
        )
        .run()
        connection.clearCache()
        try StoreMetadata.setValue(resolved.canonicalJSON, for: "schema", connection)
        try StoreMetadata.setValue(resolved.versionHash, for: "schemaHash", connection)
        try recordSchemaChange(
            SchemaVersionChange(from: current.versionHash, to: resolved.versionHash), author: options.author, connection
        )
        return (plan, new)
    }

    /// A history transaction of its own for a migration: the versions as its one change row
    /// (kind `schema`), which readers of older versions skip.
    static func recordSchemaChange(_ change: SchemaVersionChange, author: String?, _ connection: SQLiteConnection)
        throws
    {
        let token = try StoreMetadata.sequence(StoreMetadata.historySequence, connection) + 1
        try StoreMetadata.setSequence(StoreMetadata.historySequence, to: token, connection)
        try connection.run(
            "INSERT INTO \(StoreMetadata.transactionTable) (\"token\", \"timestamp\", \"author\") VALUES (?1, ?2, ?3)",
            [.int(token), .int(Timestamp(Date()).microsecondsSince1970), author.map(Value.string) ?? .null])
        try connection.run(
            "INSERT INTO \(StoreMetadata.changeTable) (\(StoreMetadata.changeColumns)) VALUES (?1, 1, ?2, '', 0, ?3, NULL, NULL)",
            [.int(token), .string(StoredHistory.schemaKind), .string(try StoredHistory.column(of: change))])
    }
}

/// The planner's reads: the store's data in its old schema, on the writer's connection inside
/// the migration's transaction.
private struct MigrationReadContext: MigrationReads {
    let context: ReadContext

    func fetch(_ descriptor: FetchDescriptor) throws -> FetchResult {
        try context.fetch(descriptor)
    }

    func aggregate(_ descriptor: AggregateDescriptor) throws -> [AggregateRow] {
        try context.aggregate(descriptor).rows
    }
}
