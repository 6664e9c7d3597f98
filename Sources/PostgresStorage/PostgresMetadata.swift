import Foundation
import ModelCore
import ModelStorage

/// The tables modeld keeps beside a store's data in its namespace, as on SQLite: the store's
/// UUID and schema, the key sequences, and the history.
struct PostgresMetadata {
    /// The namespace holding the tables: the store's, or a staged migration's copy of it.
    let namespace: String
    /// The store's namespace, which names its lock and its notification channel.
    let storeNamespace: String

    init(namespace: String, storeNamespace: String? = nil) {
        self.namespace = namespace
        self.storeNamespace = storeNamespace ?? namespace
    }

    /// The key of the store's advisory lock.
    private var lockKey: Value { .string("modeld:" + storeNamespace) }

    var metaTable: String { SQL.quote(namespace) + ".\"_modeld_meta\"" }
    var sequenceTable: String { SQL.quote(namespace) + ".\"_modeld_sequence\"" }
    var transactionTable: String { SQL.quote(namespace) + ".\"_modeld_transaction\"" }
    var changeTable: String { SQL.quote(namespace) + ".\"_modeld_change\"" }

    /// Takes the store's lock until the transaction ends: its first opening and its schema
    /// changes take turns across every daemon (an advisory lock on the namespace's name).
    func lock(_ session: PostgresSession) throws {
        try session.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey])
    }

    /// Takes the store's lock shared until the transaction ends, as every save does: saves go
    /// on side by side, while a schema change (``lock(_:)``) waits for them and they for it — so a
    /// save never writes rows of a schema another daemon has just changed. A save that waits
    /// longer than `lock_timeout` (10 s: a staged migration elsewhere) fails `unavailable`.
    func sharedLock(_ session: PostgresSession) throws {
        // One round trip: the timeout is set (for this transaction) before the lock is waited for.
        // Sent without waiting: the save's next statement waits, and fails if this did.
        try session.send(
            "SELECT set_config('lock_timeout', '10s', true), pg_advisory_xact_lock_shared(hashtext($1))", [lockKey])
    }

    /// Makes the namespace and the metadata tables when missing and returns the store's UUID,
    /// made by the first opener. Inside a transaction holding ``lock(_:)``, so that daemons
    /// opening a new store at once agree on it. A namespace that holds other tables but no
    /// modeld store is refused.
    func prepare(_ session: PostgresSession, creating: Bool = true) throws -> UUID {
        try lock(session)
        // pg_class rather than information_schema, whose views cost seconds on a busy catalog.
        let tables = try session.query(
            "SELECT count(*), count(*) FILTER (WHERE c.relname = '_modeld_meta') FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            [.string(namespace)])
        let cells = tables.first.map { Array($0) } ?? []
        let all = try cells.first.flatMap(PostgresValues.int) ?? 0
        let meta = try cells.dropFirst().first.flatMap(PostgresValues.int) ?? 0
        guard meta > 0 || all == 0 else {
            throw ModelError(
                .invalidArgument,
                "the PostgreSQL schema '\(namespace)' holds \(all) table(s) of its own but no modeld store; a store's schema is its own, and dropping the store drops the schema with everything in it: choose another (?schema=…)",
                context: ["schema": namespace])
        }
        guard meta > 0 || creating else {
            throw ModelError(
                .notFound,
                "the PostgreSQL schema '\(namespace)' holds no store: it was dropped (by another daemon?); create the store again to start an empty one there",
                context: ["schema": namespace])
        }
        // A store is made whole in one transaction: one with its metadata table has the rest.
        if meta == 0 {
            try refuseObjectsOfOthers(session)
            try createTables(session)
        }
        try session.query(
            "INSERT INTO \(metaTable) VALUES ('storeIdentifier', $1) ON CONFLICT DO NOTHING",
            [.string(UUID().uuidString.lowercased())])
        try session.query("INSERT INTO \(metaTable) VALUES ('format', '1') ON CONFLICT DO NOTHING")
        guard let text = try value(for: "storeIdentifier", session), let uuid = UUID(uuidString: text) else {
            throw ModelError(.storageFailure, "the store's UUID in the PostgreSQL schema '\(namespace)' is unreadable")
        }
        return uuid
    }

    /// A new store's namespace is its own, and dropping the store drops it with everything in it:
    /// one that already holds anything (a sequence, a function, a type: tables are refused above)
    /// is refused, so that a drop never takes what was there before.
    private func refuseObjectsOfOthers(_ session: PostgresSession) throws {
        let rows = try session.query(
            """
            SELECT (SELECT count(*) FROM pg_catalog.pg_class c WHERE c.relnamespace = n.oid)
                 + (SELECT count(*) FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid)
                 + (SELECT count(*) FROM pg_catalog.pg_type t
                     WHERE t.typnamespace = n.oid AND t.typrelid = 0 AND t.typcategory <> 'A')
            FROM pg_catalog.pg_namespace n WHERE n.nspname = $1
            """,
            [.string(namespace)])
        let count = try rows.first.flatMap { try $0.first.flatMap(PostgresValues.int) } ?? 0
        guard count == 0 else {
            throw ModelError(
                .invalidArgument,
                "the PostgreSQL schema '\(namespace)' already holds \(count) object(s) of its own (sequences, functions, types); a store's schema is its own, and dropping the store drops the schema with everything in it: choose another (?schema=…)",
                context: ["schema": namespace])
        }
    }

    /// Makes the namespace, the functions compiled queries call and the metadata tables, where
    /// missing.
    func createTables(_ session: PostgresSession) throws {
        try session.query("CREATE SCHEMA IF NOT EXISTS \(SQL.quote(namespace))")
        for statement in PostgresFunctions.statements(namespace: namespace) { try session.query(statement) }
        try session.query(
            "CREATE TABLE IF NOT EXISTS \(metaTable) (\"key\" text PRIMARY KEY, \"value\" text NOT NULL)")
        try session.query(
            "CREATE TABLE IF NOT EXISTS \(sequenceTable) (\"name\" text PRIMARY KEY, \"value\" bigint NOT NULL)")
        try session.query(
            "CREATE TABLE IF NOT EXISTS \(transactionTable) (\"token\" bigint PRIMARY KEY, \"timestamp\" bigint NOT NULL, \"author\" text, \"user\" text)"
        )
        // A store made before history recorded the saving user gains the column.
        try session.query("ALTER TABLE \(transactionTable) ADD COLUMN IF NOT EXISTS \"user\" text")
        try session.query(
            """
            CREATE TABLE IF NOT EXISTS \(changeTable) ("token" bigint NOT NULL, "position" bigint NOT NULL, \
            "kind" text NOT NULL, "entity" text NOT NULL, "pk" bigint NOT NULL, "changed" text, "tombstone" text, \
            PRIMARY KEY ("token", "position"))
            """)
    }

    /// The metadata tables' names (without the namespace).
    static let tableNames = ["_modeld_meta", "_modeld_sequence", "_modeld_transaction", "_modeld_change"]

    /// The metadata value for `key`.
    func value(for key: String, _ session: PostgresSession) throws -> String? {
        let rows = try session.query("SELECT \"value\" FROM \(metaTable) WHERE \"key\" = $1", [.string(key)])
        return try rows.first.flatMap { row in try row.first.flatMap(PostgresValues.text) }
    }

    /// Sets the metadata value for `key`.
    func setValue(_ value: String, for key: String, _ session: PostgresSession) throws {
        try session.query(
            "INSERT INTO \(metaTable) VALUES ($1, $2) ON CONFLICT (\"key\") DO UPDATE SET \"value\" = excluded.\"value\"",
            [.string(key), .string(value)])
    }

    /// The schema kept in the store (empty for a new store).
    func schema(_ session: PostgresSession) throws -> ResolvedSchema {
        guard let json = try value(for: "schema", session) else { return try ResolvedSchema.resolved(Schema()) }
        return try ResolvedSchema.resolved(try Schema(json: json))
    }
}
