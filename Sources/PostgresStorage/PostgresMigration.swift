import Foundation
import ModelCore
import ModelStorage

extension PostgresStore {
    /// Migrates the store to `schema` (see ``StorageBackend/migrate(to:options:)``) in one
    /// transaction holding the store's lock, so that saves through every daemon wait for it and
    /// then find the new schema: the plan is worked out against the data, the tables change
    /// (``RelationalMigration``), the schema is stored and a schema-change transaction recorded.
    public func migrate(to schema: Schema, options: MigrationOptions) async throws -> MigrationPlan {
        try checkWritable()
        let resolved = try ResolvedSchema.resolved(schema)
        let metadata = metadata, storeIdentifier = storeIdentifier, namespace = endpoint.namespace
        let (plan, layout) = try await writer.run { session in
            try session.transaction {
                try metadata.lock(session)
                return try Self.migrate(
                    session, to: resolved, options: options, metadata: metadata, namespace: namespace,
                    storeIdentifier: storeIdentifier)
            }
        }
        if let layout { setLayout(layout) }
        return plan
    }

    /// The migration's work inside the caller's transaction (or savepoint), which holds the
    /// store's lock: plans against the stored schema and data, then, unless it is a dry run,
    /// changes the tables, stores the schema and records the change. Returns the plan, and the
    /// new layout when the store changed.
    static func migrate(
        _ session: PostgresSession, to resolved: ResolvedSchema, options: MigrationOptions,
        metadata: PostgresMetadata, namespace: String, storeIdentifier: UUID
    ) throws -> (MigrationPlan, PostgresLayout?) {
        let current = try metadata.schema(session)
        let old = PostgresLayout(current, namespace: namespace)
        if current.versionHash == resolved.versionHash {
            let unchanged = MigrationPlanner.planSameShape(from: current, to: resolved)
            if options.dryRun { return (unchanged, nil) }
            guard unchanged.isAllowed else { throw unchanged.refusalError }
            // The same stored shape: keep the declaration as given (order, rename hints).
            guard current.schema != resolved.schema else { return (unchanged, nil) }
            try metadata.setValue(resolved.canonicalJSON, for: "schema", session)
            return (unchanged, PostgresLayout(resolved, namespace: namespace))
        }
        let reads = PostgresMigrationReads(
            read: PostgresRead(
                objects: PostgresObjects(session: session, layout: old, storeIdentifier: storeIdentifier)))
        let plan = try MigrationPlanner.plan(
            from: current, to: resolved, reads: reads, allowDataLoss: options.allowDataLoss)
        if options.dryRun { return (plan, nil) }
        guard plan.isAllowed else { throw plan.refusalError }
        let new = PostgresLayout(resolved, namespace: namespace)
        try RelationalMigration(
            old: old, new: new, changes: SchemaChanges(from: current, to: resolved),
            target: PostgresMigrationTarget(session: session, metadata: metadata, layout: new)
        ).run()
        try metadata.setValue(resolved.canonicalJSON, for: "schema", session)
        try metadata.setValue(resolved.versionHash, for: "schemaHash", session)
        let token = try metadata.nextHistoryToken(session)
        try session.query(
            "INSERT INTO \(metadata.transactionTable) VALUES ($1, $2, $3)",
            [.int(token), .int(Timestamp(Date()).microsecondsSince1970), options.author.map(Value.string) ?? .null])
        let change = try StoredHistory.column(
            of: SchemaVersionChange(from: current.versionHash, to: resolved.versionHash))
        try session.query(
            "INSERT INTO \(metadata.changeTable) VALUES ($1, 1, $2, '', 0, $3, NULL)",
            [.int(token), .string(StoredHistory.schemaKind), .string(change)])
        try session.query("SELECT pg_notify($1, $2)", [.string(metadata.channel), .string(String(token))])
        return (plan, new)
    }
}

/// The planner's reads: the store's data in its old schema, inside the migration's transaction.
private struct PostgresMigrationReads: MigrationReads {
    let read: PostgresRead

    func fetch(_ descriptor: FetchDescriptor) throws -> FetchResult {
        try read.fetch(descriptor)
    }

    func aggregate(_ descriptor: AggregateDescriptor) throws -> [AggregateRow] {
        try read.aggregate(descriptor)
    }
}

/// PostgreSQL's statements and table shapes for ``RelationalMigration``: a string attribute's
/// folded forms are renamed, dropped and filled with it.
struct PostgresMigrationTarget: RelationalMigrationTarget {
    let session: PostgresSession
    let metadata: PostgresMetadata
    /// The new layout (for its namespace).
    let layout: PostgresLayout

    func run(_ sql: String, _ values: [Value]) throws {
        try session.query(sql, values)
    }

    func placeholder(_ index: Int) -> String { "$\(index)" }

    func createTable(_ table: TableLayout) -> String {
        layout.createTable(table)
    }

    func createJoinTable(_ name: String) -> String {
        layout.createJoinTable(name)
    }

    func indexStatements(of layout: any SQLTableLayout) -> [String] {
        PostgresLayout(layout.schema, namespace: self.layout.namespace).createStatements.filter {
            $0.hasPrefix("CREATE INDEX") || $0.hasPrefix("CREATE UNIQUE INDEX")
        }
    }

    func columnDefinitions(_ column: TableLayout.Column, default defaultSQL: String?) -> [String] {
        PostgresLayout.columnDefinitions(column, default: defaultSQL)
    }

    func storedColumns(_ column: TableLayout.Column) -> [String] {
        [column.name] + PostgresLayout.folded(column)
    }

    func assignments(_ column: TableLayout.Column, _ value: Value) -> [(String, Value)] {
        var assignments = [(column.name, value)]
        if column.type == .string {
            for options in PostgresLayout.foldings {
                let folded: Value =
                    if case .string(let text) = value { .string(TextComparison.fold(text, options: options)) } else {
                        .null
                    }
                assignments.append((PostgresLayout.foldedColumn(column.name, options), folded))
            }
        }
        return assignments
    }

    /// A constant of the column's type; none for strings, whose folded forms would need defaults
    /// of their own (the rows are filled instead).
    func constant(_ value: Value, for column: TableLayout.Column) -> String? {
        switch value {
        case .null: "NULL"
        case .int(let v): String(v)
        case .double(let v): v.isFinite ? "'\(v)'::float8" : nil
        case .bool(let v): v ? "TRUE" : "FALSE"
        case .date(let v): String(v.microsecondsSince1970)
        case .string: nil
        case .json(let v): v.contains("\0") ? nil : SQL.literal(v)
        case .uuid(let v): SQL.literal(v.uuidString.lowercased()) + "::uuid"
        case .url(let v): SQL.literal(v.absoluteString)
        case .decimal(let v): SQL.literal("\(v)") + "::numeric"
        case .data(let v): "decode('\(v.map { String(format: "%02x", $0) }.joined())', 'hex')"
        }
    }

    var sequenceTable: String { metadata.sequenceTable }
    var changeTable: String { metadata.changeTable }
}
