import Foundation
import ModelCore
import ModelStorage
import PostgresNIO
import Synchronization

/// A store in a PostgreSQL schema (namespace) of its own. It makes or joins the store — one
/// UUID, kept in the namespace, for every process that opens it — keeps its modeld schema, and
/// lays out the tables of a schema applied to a store without objects, taking turns with other
/// openers through an advisory lock; reads compile to PostgreSQL's SQL (``PostgresDialect``),
/// saves run the shared save algorithm (``PostgresSave``).
public final class PostgresStore: StorageBackend {
    public let endpoint: PostgresEndpoint
    /// The store's UUID, kept in its namespace.
    public let storeIdentifier: UUID
    /// The connection saves, migrations and schema changes run on, one at a time.
    let writer: PostgresConnectionQueue
    /// Saves waiting for the writer together, committed in one transaction (``GroupCommit``).
    let saves: GroupCommit<PostgresGroupWriter>
    /// The connections reads run on.
    let readers: PostgresConnectionPool
    /// The connections of fetches streamed as they are read, one each (``fetchObjects(_:batchSize:_:)``).
    let streams: PostgresStreams
    let metadata: PostgresMetadata
    private let layout: Mutex<PostgresLayout>
    private let isClosed = Mutex(false)
    /// Whether a staged migration of this opener holds the store (``PostgresStagedMigration``).
    let isMigrating = Mutex(false)

    /// Opens the store at `url` (see ``PostgresEndpoint``), making its namespace and metadata the
    /// first time (unless not `creating`: then a namespace without a store is `notFound`); with a
    /// schema, applies it (``apply(schema:)``).
    public static func open(url: String, applying schema: Schema? = nil, creating: Bool = true) async throws
        -> PostgresStore
    {
        let endpoint = try PostgresEndpoint(url: url)
        let metadata = PostgresMetadata(namespace: endpoint.namespace)
        let writer = PostgresConnectionQueue(endpoint: endpoint, label: "writer")
        do {
            let (identifier, stored) = try await writer.run { session in
                try session.transaction {
                    (try metadata.prepare(session, creating: creating), try metadata.schema(session))
                }
            }
            let store = PostgresStore(
                endpoint: endpoint, storeIdentifier: identifier, writer: writer, metadata: metadata,
                layout: PostgresLayout(stored, namespace: endpoint.namespace))
            if let schema { try await store.apply(schema: schema) }
            return store
        } catch {
            await writer.close()
            throw error
        }
    }

    private init(
        endpoint: PostgresEndpoint, storeIdentifier: UUID, writer: PostgresConnectionQueue, metadata: PostgresMetadata,
        layout: PostgresLayout
    ) {
        self.endpoint = endpoint
        self.storeIdentifier = storeIdentifier
        self.writer = writer
        self.saves = GroupCommit(writer: writer, metadata: metadata)
        self.readers = PostgresConnectionPool(endpoint: endpoint, size: endpoint.poolSize)
        self.streams = PostgresStreams(endpoint: endpoint, limit: endpoint.poolSize)
        self.metadata = metadata
        self.layout = Mutex(layout)
    }

    /// The store's schema as another process may have left it: read from the store.
    public func schema() async throws -> ResolvedSchema {
        try checkOpen()
        let metadata = metadata
        let stored = try await writer.run { session in try metadata.schema(session) }
        layout.withLock { $0 = PostgresLayout(stored, namespace: endpoint.namespace) }
        return stored
    }

    /// Sets the store's schema: lays out its tables in a store without objects (replacing those
    /// of an earlier schema), accepts a schema with the same version hash, and otherwise throws
    /// `schemaMismatch`, as the other backends do.
    public func apply(schema: Schema) async throws {
        try checkWritable()
        let resolved = try ResolvedSchema.resolved(schema)
        let metadata = metadata, namespace = endpoint.namespace
        try await writer.run { session in
            try session.transaction {
                try metadata.lock(session)
                let current = try metadata.schema(session)
                if current.versionHash == resolved.versionHash {
                    if current.schema != resolved.schema {
                        try metadata.setValue(resolved.canonicalJSON, for: "schema", session)
                    }
                    return
                }
                let old = PostgresLayout(current, namespace: namespace)
                for table in old.tables {
                    let rows = try session.query("SELECT 1 FROM \(old.qualified(table.name)) LIMIT 1")
                    guard rows.isEmpty else { throw ModelError.schemaMismatch(store: current, requested: resolved) }
                }
                for statement in old.dropStatements { try session.query(statement) }
                for statement in PostgresLayout(resolved, namespace: namespace).createStatements {
                    try session.query(statement)
                }
                try metadata.setValue(resolved.canonicalJSON, for: "schema", session)
                try metadata.setValue(resolved.versionHash, for: "schemaHash", session)
            }
        }
        layout.withLock { $0 = PostgresLayout(resolved, namespace: namespace) }
    }

    /// The current layout, read again from the store when another process may have changed
    /// the schema (a store still without one).
    func currentLayout() async throws -> PostgresLayout {
        try checkOpen()
        let cached = layout.withLock { $0 }
        guard cached.schema.entityNames.isEmpty else { return cached }
        return PostgresLayout(try await schema(), namespace: endpoint.namespace)
    }

    /// Saves atomically and durably (``PostgresSave``); saves waiting for the writer together
    /// share one transaction and one commit (``GroupCommit``).
    public func save(_ changes: ChangeSet) async throws -> SaveResult {
        let layout = try await currentLayout()
        try checkWritable()
        guard !changes.isEmpty else { return SaveResult() }
        try ChangeSetPlan.checkIdentifiers(changes, schema: layout.schema, storeIdentifier: storeIdentifier)
        let metadata = metadata, storeIdentifier = storeIdentifier
        return try await saves.save { group in
            let session = group.session
            let save = PostgresSave(
                session: session, layout: layout, metadata: metadata, storeIdentifier: storeIdentifier,
                changes: changes)
            guard changes.uniquenessPolicy == .upsert else { return try save.run() }
            // An upsert that raced another daemon's insert of the same unique values (both found
            // none, the other committed first) runs again, and now finds it to update: undone to
            // a savepoint of its own, which keeps the group's other saves, with the group's memo
            // (the locks the attempt took are released).
            var attempt = 1
            while true {
                let memo = group.memo?.copy()
                try session.send("SAVEPOINT upsert")
                do {
                    let result = try save.run()
                    try session.send("RELEASE upsert")
                    return result
                } catch let error as ModelError where error.context["sqlstate"] == "23505" && attempt < 5 {
                    try session.query("ROLLBACK TO upsert")
                    try session.send("RELEASE upsert")
                    group.memo = memo
                    attempt += 1
                }
            }
        }
    }

    /// The objects with these identifiers, in the order given; those that don't exist are left out.
    public func snapshots(for ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        let layout = try await currentLayout()
        let keys = try ObjectLookup.keysByRoot(ids, schema: layout.schema, storeIdentifier: storeIdentifier)
        guard !keys.isEmpty else { return [] }
        let storeIdentifier = storeIdentifier
        let found = try await readers.runAsync { [keys] session in
            let objects = PostgresObjects(session, layout: layout, storeIdentifier: storeIdentifier)
            var found: [String: [Int64: ObjectSnapshot]] = [:]
            for (root, rootKeys) in keys {
                for snapshot in try await objects.objects(root: root, keys: rootKeys.sorted(), on: session) {
                    if let key = snapshot.id.primaryKey { found[root, default: [:]][key] = snapshot }
                }
            }
            return found
        }
        return ids.compactMap { ObjectLookup.match($0, in: found, schema: layout.schema) }
    }

    /// History transactions after `token` (from the start when nil), oldest first, at most `limit`.
    public func history(after token: HistoryToken?, limit: Int?) async throws -> [HistoryTransaction] {
        try checkOpen()
        let metadata = metadata, storeIdentifier = storeIdentifier
        return try await readers.run { session in
            try Self.history(session, after: token, limit: limit, metadata: metadata, storeIdentifier: storeIdentifier)
        }
    }

    /// History transactions read on `session`.
    static func history(
        _ session: PostgresSession, after token: HistoryToken?, limit: Int?, metadata: PostgresMetadata,
        storeIdentifier: UUID
    ) throws -> [HistoryTransaction] {
        if let limit, limit < 0 { throw ModelError(.invalidArgument, "limit \(limit) is negative") }
        var transactions: [HistoryTransaction] = []
        for row in try session.query(
            "SELECT \"token\", \"timestamp\", \"author\", \"user\" FROM \(metadata.transactionTable) WHERE \"token\" > $1 ORDER BY \"token\"\(limit.map { " LIMIT \($0)" } ?? "")",
            [.int(token?.rawValue ?? 0)])
        {
            let cells = Array(row)
            transactions.append(
                HistoryTransaction(
                    token: HistoryToken(try PostgresValues.int(cells[0]) ?? 0),
                    timestamp: Timestamp(microsecondsSince1970: try PostgresValues.int(cells[1]) ?? 0),
                    author: try PostgresValues.text(cells[2]), changes: [], user: try PostgresValues.text(cells[3])))
        }
        guard let first = transactions.first?.token, let last = transactions.last?.token else { return [] }
        var positions: [Int64: Int] = [:]
        for (index, transaction) in transactions.enumerated() { positions[transaction.token.rawValue] = index }
        for row in try session.query(
            "SELECT \"token\", \"kind\", \"entity\", \"pk\", \"changed\", \"tombstone\" FROM \(metadata.changeTable) WHERE \"token\" BETWEEN $1 AND $2 ORDER BY \"token\", \"position\"",
            [.int(first.rawValue), .int(last.rawValue)])
        {
            let cells = Array(row)
            guard let index = try PostgresValues.int(cells[0]).flatMap({ positions[$0] }),
                let kind = try PostgresValues.text(cells[1]), let entity = try PostgresValues.text(cells[2]),
                let key = try PostgresValues.int(cells[3]),
                let stored = try StoredHistory.row(
                    kind: kind, entity: entity, key: key, changed: try PostgresValues.text(cells[4]),
                    tombstone: try PostgresValues.text(cells[5]), storeIdentifier: storeIdentifier)
            else { continue }
            StoredHistory.add(stored, to: &transactions[index])
        }
        return transactions
    }

    /// The token of the latest transaction ever saved, or nil.
    public func currentHistoryToken() async throws -> HistoryToken? {
        try checkOpen()
        let metadata = metadata
        // One statement, sent from this task: followers ask for it on every idle poll.
        return try await readers.runAsync { session in
            try Self.historyToken(try await session.query(Self.historyTokenQuery(metadata)))
        }
    }

    /// The latest token, read on `session` (inside the caller's transaction, if any).
    static func historyToken(_ session: PostgresSession, metadata: PostgresMetadata) throws -> HistoryToken? {
        try historyToken(try session.query(historyTokenQuery(metadata)))
    }

    /// The statement reading the latest token.
    private static func historyTokenQuery(_ metadata: PostgresMetadata) -> String {
        "SELECT \"value\" FROM \(metadata.sequenceTable) WHERE \"name\" = '\(PostgresMetadata.historySequence)'"
    }

    /// The latest token from the rows of ``historyTokenQuery(_:)``; nil before the first save.
    private static func historyToken(_ rows: [PostgresRow]) throws -> HistoryToken? {
        let value = try rows.first.flatMap { try $0.first.flatMap(PostgresValues.int) } ?? 0
        return value > 0 ? HistoryToken(value) : nil
    }

    /// The tables the current schema lays out, by name (for checking what was made).
    public func tableNames() async throws -> [String] {
        let namespace = endpoint.namespace
        return try await writer.run { session in
            try session.query(
                "SELECT c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname NOT LIKE '\\_modeld\\_%' ORDER BY c.relname",
                [.string(namespace)]
            ).compactMap { row in try row.first.flatMap(PostgresValues.text) }
        }
    }

    /// Closes the store's connection; later calls fail with `closed`.
    public func close() async {
        isClosed.withLock { $0 = true }
        await streams.close()
        await readers.close()
        await writer.close()
    }

    /// Replaces the cached layout (after a migration).
    func setLayout(_ new: PostgresLayout) {
        layout.withLock { $0 = new }
    }

    /// Throws `closed` once the store is closed, `unavailable` while a staged migration holds it.
    func checkWritable() throws(ModelError) {
        try checkOpen()
        if isMigrating.withLock({ $0 }) { throw ModelError.migrating(location) }
    }

    /// Throws `closed` once the store is closed.
    func checkOpen() throws(ModelError) {
        guard !isClosed.withLock({ $0 }) else {
            throw ModelError(.closed, "the store \(endpoint) is closed; open it again to use it")
        }
    }
}
