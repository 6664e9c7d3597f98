import Foundation
import ModelCore
import ModelStorage
import Synchronization

extension PostgresStore {
    /// Begins a staged migration (``StagedMigration``) on a connection of its own, in one
    /// transaction holding the store's lock — so saves through this opener are refused
    /// (`unavailable`), and saves through other daemons wait, then fail `unavailable` after the
    /// lock timeout — on a copy of the store in a namespace of its own (PostgreSQL's schema
    /// changes lock the tables they change, readers included; the copy keeps the store's tables
    /// readable at their last commit throughout). The commit puts the copy in the store's place;
    /// a rollback, or a connection that breaks, leaves the store as it was.
    public func beginStagedMigration(author: String?) async throws -> any StagedMigration {
        try checkWritable()
        let claimed = isMigrating.withLock { migrating in
            defer { migrating = true }
            return !migrating
        }
        guard claimed else { throw ModelError.migrating(location) }
        let staging =
            "_modeld_staged_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(24)
        let connection = PostgresConnectionQueue(endpoint: endpoint, label: "migration", searchPath: staging)
        let metadata = metadata
        do {
            let stored = try await connection.run { session in
                try session.query("BEGIN")
                do {
                    try metadata.lock(session)
                    return try Self.copy(metadata, to: staging, session)
                } catch {
                    _ = try? session.query("ROLLBACK")
                    throw error
                }
            }
            return PostgresStagedMigration(
                store: self, connection: connection, layout: PostgresLayout(stored, namespace: staging),
                staging: staging, author: author)
        } catch {
            await connection.close()
            isMigrating.withLock { $0 = false }
            throw error
        }
    }

    /// Copies the store into the namespace `staging` (tables laid out as the store's schema
    /// lays them out, with the same index names; metadata and history as they are) and returns
    /// its schema.
    private static func copy(_ metadata: PostgresMetadata, to staging: String, _ session: PostgresSession) throws
        -> ResolvedSchema
    {
        let schema = try metadata.schema(session)
        let copy = PostgresMetadata(namespace: staging, storeNamespace: metadata.storeNamespace)
        try copy.createTables(session)
        for table in PostgresMetadata.tableNames {
            try session.query(
                "INSERT INTO \(SQL.quote(staging)).\(SQL.quote(table)) SELECT * FROM \(SQL.quote(metadata.namespace)).\(SQL.quote(table))"
            )
        }
        let layout = PostgresLayout(schema, namespace: staging)
        for statement in layout.createStatements { try session.query(statement) }
        for table in layout.tables {
            let columns =
                (["_pk", "_entity", "_version"] + table.columns.flatMap { [$0.name] + PostgresLayout.folded($0) })
                .map(SQL.quote).joined(separator: ", ")
            try session.query(
                "INSERT INTO \(layout.qualified(table.name)) (\(columns)) SELECT \(columns) FROM \(SQL.quote(metadata.namespace)).\(table.quoted)"
            )
        }
        for join in schema.joinTables {
            try session.query(
                "INSERT INTO \(layout.qualified(join.name)) SELECT \"source\", \"target\" FROM \(SQL.quote(metadata.namespace)).\(SQL.quote(join.name))"
            )
        }
        return schema
    }
}

/// A staged migration of a PostgreSQL store: every call runs on the migration's connection,
/// inside the transaction ``PostgresStore/beginStagedMigration(author:)`` opened, on the copy of
/// the store it made, each in a savepoint (a failed save or step is undone alone); reads see
/// the migration's own writes.
final class PostgresStagedMigration: StagedMigration {
    private let store: PostgresStore
    private let connection: PostgresConnectionQueue
    private let author: String?
    /// The namespace of the copy the migration works on.
    private let staging: String
    /// The current stage's layout; nil once the migration is over.
    private let current: Mutex<PostgresLayout?>

    init(
        store: PostgresStore, connection: PostgresConnectionQueue, layout: PostgresLayout, staging: String,
        author: String?
    ) {
        self.store = store
        self.staging = staging
        self.connection = connection
        self.author = author
        self.current = Mutex(layout)
    }

    var location: StoreLocation { store.location }
    var storeIdentifier: UUID { store.storeIdentifier }

    private func layout() throws(ModelError) -> PostgresLayout {
        guard let layout = current.withLock({ $0 }) else {
            throw ModelError(.invalidArgument, "this staged migration of \(store.location) is over")
        }
        return layout
    }

    /// Runs `body` inside the migration's transaction, in a savepoint. A connection that broke
    /// took the transaction with it: the migration is over, and says so.
    private func run<T: Sendable>(_ body: @escaping @Sendable (PostgresSession, PostgresLayout) throws -> T)
        async throws -> T
    {
        let layout = try layout()
        do {
            return try await connection.run { session in
                try session.query("SAVEPOINT step")
                do {
                    let result = try body(session, layout)
                    try session.query("RELEASE SAVEPOINT step")
                    return result
                } catch {
                    _ = try? session.query("ROLLBACK TO SAVEPOINT step")
                    throw error
                }
            }
        } catch let error as ModelError where error.code == .unavailable {
            await rollback()
            throw ModelError(
                .unavailable,
                "the staged migration of \(store.location) lost its connection, and PostgreSQL rolled it back; nothing of it was kept: begin it again (\(error.message))",
                context: error.context)
        }
    }

    func schema() async throws -> ResolvedSchema { try layout().schema }

    func migrate(to schema: Schema, options: MigrationOptions) async throws -> MigrationPlan {
        let resolved = try ResolvedSchema.resolved(schema)
        var options = options
        options.author = options.author ?? author
        let stepOptions = options
        let metadata = stagingMetadata, namespace = staging, storeIdentifier = store.storeIdentifier
        let (plan, layout) = try await run { session, _ in
            try PostgresStore.migrate(
                session, to: resolved, options: stepOptions, metadata: metadata, namespace: namespace,
                storeIdentifier: storeIdentifier)
        }
        if let layout { current.withLock { if $0 != nil { $0 = layout } } }
        return plan
    }

    /// The metadata of the copy.
    private var stagingMetadata: PostgresMetadata {
        PostgresMetadata(namespace: staging, storeNamespace: store.endpoint.namespace)
    }

    /// Runs `body` on the copy, with `changes` shadowing the tables they change when they change
    /// anything, as the store's own reads do (``PostgresOverlay``): installed in a savepoint of
    /// their own, rolled back afterwards, so that nothing of them is kept.
    private func read<T: Sendable>(
        overlay changes: ChangeSet? = nil, _ body: @escaping @Sendable (PostgresRead) throws -> T
    ) async throws -> T {
        let storeIdentifier = store.storeIdentifier, metadata = stagingMetadata
        return try await run { session, layout in
            var objects = PostgresObjects(session: session, layout: layout, storeIdentifier: storeIdentifier)
            guard let changes, !changes.isEmpty else { return try body(PostgresRead(objects: objects)) }
            try session.query("SAVEPOINT overlay")
            defer { _ = try? session.query("ROLLBACK TO SAVEPOINT overlay") }
            objects.overlay = try PostgresOverlay.install(
                changes, layout: layout, metadata: metadata, storeIdentifier: storeIdentifier, session: session)
            return try body(PostgresRead(objects: objects))
        }
    }

    func fetch(_ descriptor: FetchDescriptor, overlay: ChangeSet?) async throws -> FetchResult {
        let validated = try descriptor.validated(in: try layout().schema, storeIdentifier: store.storeIdentifier)
        return try await read(overlay: overlay) { try $0.fetch(validated) }
    }

    func aggregate(_ descriptor: AggregateDescriptor, overlay: ChangeSet?) async throws -> [AggregateRow] {
        let validated = try descriptor.validated(in: try layout().schema, storeIdentifier: store.storeIdentifier)
        return try await read(overlay: overlay) { try $0.aggregate(validated) }
    }

    func snapshots(for ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        let schema = try layout().schema
        let keys = try ObjectLookup.keysByRoot(ids, schema: schema, storeIdentifier: store.storeIdentifier)
        guard !keys.isEmpty else { return [] }
        let found = try await read { [keys] read in
            var found: [String: [Int64: ObjectSnapshot]] = [:]
            for (root, rootKeys) in keys {
                for snapshot in try read.objects.objects(root: root, keys: rootKeys.sorted()) {
                    if let key = snapshot.id.primaryKey { found[root, default: [:]][key] = snapshot }
                }
            }
            return found
        }
        return ids.compactMap { ObjectLookup.match($0, in: found, schema: schema) }
    }

    func save(_ changes: ChangeSet) async throws -> SaveResult {
        guard !changes.isEmpty else { return SaveResult() }
        try ChangeSetPlan.checkIdentifiers(changes, schema: try layout().schema, storeIdentifier: store.storeIdentifier)
        let metadata = stagingMetadata, storeIdentifier = store.storeIdentifier
        return try await run { session, layout in
            try PostgresSave(
                session: session, layout: layout, metadata: metadata, storeIdentifier: storeIdentifier,
                changes: changes
            ).run()
        }
    }

    func history(after token: HistoryToken?, limit: Int?) async throws -> [HistoryTransaction] {
        let metadata = stagingMetadata, storeIdentifier = store.storeIdentifier
        return try await run { session, _ in
            try PostgresStore.history(
                session, after: token, limit: limit, metadata: metadata, storeIdentifier: storeIdentifier)
        }
    }

    func currentHistoryToken() async throws -> HistoryToken? {
        let metadata = stagingMetadata
        let value = try await run { session, _ in try metadata.sequence(PostgresMetadata.historySequence, session) }
        return value > 0 ? HistoryToken(value) : nil
    }

    /// Puts the copy in the store's place (the store's namespace is dropped, the copy's renamed
    /// to it) and commits; the store's cached layout becomes the last step's. A commit that fails
    /// rolls back: the store stays as it was.
    func commit() async throws {
        let layout = try layout()
        defer { current.withLock { $0 = nil } }
        defer { store.isMigrating.withLock { $0 = false } }
        let namespace = store.endpoint.namespace, staging = staging
        do {
            try await connection.run { session in
                do {
                    try session.query("DROP SCHEMA \(SQL.quote(namespace)) CASCADE")
                    try session.query("ALTER SCHEMA \(SQL.quote(staging)) RENAME TO \(SQL.quote(namespace))")
                    try session.query("COMMIT")
                } catch {
                    _ = try? session.query("ROLLBACK")
                    throw error
                }
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
        store.setLayout(PostgresLayout(layout.schema, namespace: namespace))
    }

    /// Rolls the transaction back and gives the store back.
    func rollback() async {
        guard
            current.withLock({ layout in
                defer { layout = nil }
                return layout != nil
            })
        else { return }
        _ = try? await connection.run { session in try session.query("ROLLBACK") }
        await connection.close()
        store.isMigrating.withLock { $0 = false }
    }
}
