import ModelCore
import ModelStorage

extension SQLiteStore {
    /// Sets the store's schema: creates the tables in a store without objects (replacing the
    /// tables of an earlier schema there), accepts a schema with the same version hash, and
    /// otherwise throws `schemaMismatch` listing the differences.
    public func apply(schema: Schema) async throws {
        let resolved = try ResolvedSchema.resolved(schema)
        _ = try cachedLayout()
        let applied = try await writer.run { connection in
            try connection.transaction(write: true) {
                try Self.write(resolved, over: StoreMetadata.schema(connection), connection)
            }
        }
        setLayout(SQLiteLayout(applied))
    }

    /// Makes `resolved` the schema of the store whose schema is `current`, inside the writer's
    /// transaction: the same stored shape keeps its tables; another shape replaces them, if
    /// they are all empty. Returns the schema now stored.
    static func write(_ resolved: ResolvedSchema, over current: ResolvedSchema, _ connection: SQLiteConnection) throws
        -> ResolvedSchema
    {
        if current.versionHash == resolved.versionHash {
            // Same stored shape; keep the declaration as given (order, rename hints).
            if current.schema != resolved.schema {
                try StoreMetadata.setValue(resolved.canonicalJSON, for: "schema", connection)
            }
            return resolved
        }
        let old = SQLiteLayout(current)
        for table in old.tables {
            let count = try connection.scalarInt("SELECT count(*) FROM (SELECT 1 FROM \(table.quoted) LIMIT 1)") ?? 0
            guard count == 0 else { throw ModelError.schemaMismatch(store: current, requested: resolved) }
        }
        for statement in old.dropStatements { try connection.execute(statement) }
        for statement in SQLiteLayout(resolved).createStatements { try connection.execute(statement) }
        try StoreMetadata.setValue(resolved.canonicalJSON, for: "schema", connection)
        try StoreMetadata.setValue(resolved.versionHash, for: "schemaHash", connection)
        connection.clearCache()
        return resolved
    }
}
