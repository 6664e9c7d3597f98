import Foundation
import ModelCore

/// The tables modeld keeps beside the data: the store's UUID and schema, the per-hierarchy key
/// sequences (and the history token's), and the history. Their names start with `_modeld_`,
/// which no entity or join table can.
enum StoreMetadata {
    static let metaTable = "\"_modeld_meta\""
    static let sequenceTable = "\"_modeld_sequence\""
    static let transactionTable = "\"_modeld_transaction\""
    static let changeTable = "\"_modeld_change\""
    /// The sequence of history tokens (entity names never start with an underscore).
    static let historySequence = "_history"

    static let createStatements = [
        "CREATE TABLE IF NOT EXISTS \(metaTable) (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS \(sequenceTable) (\"name\" TEXT PRIMARY KEY, \"value\" INTEGER NOT NULL) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS \(transactionTable) (\"token\" INTEGER PRIMARY KEY, \"timestamp\" INTEGER NOT NULL, \"author\" TEXT, \"user\" TEXT)",
        """
        CREATE TABLE IF NOT EXISTS \(changeTable) ("token" INTEGER NOT NULL, "position" INTEGER NOT NULL, \
        "kind" TEXT NOT NULL, "entity" TEXT NOT NULL, "pk" INTEGER NOT NULL, "changed" TEXT, "tombstone" TEXT, \
        "count" INTEGER, PRIMARY KEY ("token", "position")) WITHOUT ROWID
        """,
    ]
    /// The tables `createStatements` make, in their order, unquoted.
    static let createdTables = [metaTable, sequenceTable, transactionTable, changeTable].map {
        String($0.dropFirst().dropLast())
    }
    /// The transaction table's columns, in order.
    static let transactionColumns = "\"token\", \"timestamp\", \"author\", \"user\""
    /// The change table's columns, in order. An insert row's `count` says how many objects it
    /// stands for, of consecutive keys from `pk` on (``SaveOperation/insertRows``); null, one.
    static let changeColumns =
        "\"token\", \"position\", \"kind\", \"entity\", \"pk\", \"changed\", \"tombstone\", \"count\""

    /// Creates the metadata tables if needed and returns the store's UUID, creating it the first
    /// time. Runs inside the writer's transaction, so two processes opening a new file agree.
    /// What is there is read from the schema table in one statement: a store made from
    /// ``EmptyDatabaseImage`` has every table already, and a statement for each table and column
    /// checked (`CREATE TABLE IF NOT EXISTS` is parsed whether or not the table exists, and each
    /// `pragma_table_info` is a statement of its own) cost a new store about 300,000 instructions.
    static func prepare(_ connection: SQLiteConnection) throws -> UUID {
        var tables: [String: String] = [:]
        try connection.query("SELECT name, sql FROM sqlite_master WHERE type = 'table'") { row in
            tables[row.text(0)] = row.text(1)
        }
        guard tables["_modeld_meta"] != nil || tables.isEmpty else {
            throw ModelError(
                .invalidArgument,
                "\(connection.path) is an SQLite database but not a modeld store; choose another path",
                context: ["path": connection.path])
        }
        for (name, statement) in zip(createdTables, createStatements) where tables[name] == nil {
            try connection.execute(statement)
        }
        // A store made before history recorded the saving user gains the column, and one made
        // before one history row could stand for a run of inserts gains `count`.
        if try !hasColumn("user", of: "_modeld_transaction", sql: tables["_modeld_transaction"], connection) {
            try connection.execute("ALTER TABLE \(transactionTable) ADD COLUMN \"user\" TEXT")
        }
        if try !hasColumn("count", of: "_modeld_change", sql: tables["_modeld_change"], connection) {
            try connection.execute("ALTER TABLE \(changeTable) ADD COLUMN \"count\" INTEGER")
        }
        try connection.run(
            "INSERT OR IGNORE INTO \(metaTable) VALUES ('storeIdentifier', ?1)",
            [.string(UUID().uuidString.lowercased())])
        try connection.run("INSERT OR IGNORE INTO \(metaTable) VALUES ('format', '1')")
        guard let text = try value(for: "storeIdentifier", connection), let uuid = UUID(uuidString: text) else {
            throw ModelError(
                .storageFailure, "the store's UUID in \(connection.path) is unreadable",
                context: ["path": connection.path])
        }
        return uuid
    }

    /// Whether `table` (whose `CREATE` statement in the schema table is `sql`, nil for a table
    /// made just now by `createStatements`, which have every column) has the column `name`. The
    /// statement names it quoted when modeld made the table with it or added it (SQLite keeps an
    /// added column's definition in the statement); otherwise SQLite is asked.
    private static func hasColumn(_ name: String, of table: String, sql: String?, _ connection: SQLiteConnection)
        throws -> Bool
    {
        guard let sql else { return true }
        if containsBytes(sql, "\"\(name)\"") { return true }
        return try connection.scalarInt(
            "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", [.string(table), .string(name)]) ?? 0 > 0
    }

    /// Whether `text` holds `part`, compared byte by byte: with Foundation imported,
    /// `String.contains` searches through NSString (about 32,000 instructions for a table's
    /// statement, twice for every store opened), and the standard library's generic
    /// `firstRange(of:)` cost more still, unspecialized.
    static func containsBytes(_ text: String, _ part: String) -> Bool {
        let text = Array(text.utf8)
        let part = Array(part.utf8)
        guard let first = part.first, part.count <= text.count else { return part.isEmpty }
        var start = 0
        while start <= text.count - part.count {
            if text[start] == first, text[start..<(start + part.count)].elementsEqual(part) { return true }
            start += 1
        }
        return false
    }

    /// The metadata value for `key`.
    static func value(for key: String, _ connection: SQLiteConnection) throws -> String? {
        var result: String?
        try connection.query(readValueSQL, [.string(key)]) {
            result = $0.text(0)
        }
        return result
    }

    /// The metadata keys of a store's labels (``LabelledStorage``) start with this.
    static let labelPrefix = "label."

    /// Keeps `labels` in the store (inside the writer's transaction that makes it).
    static func setLabels(_ labels: [String: String], _ connection: SQLiteConnection) throws {
        for (name, value) in labels.sorted(by: { $0.key < $1.key }) {
            try setValue(value, for: labelPrefix + name, connection)
        }
    }

    /// The labels the store was made with.
    static func labels(_ connection: SQLiteConnection) throws -> [String: String] {
        var labels: [String: String] = [:]
        // The keys from `label.` up to (not including) `label/`: the prefix's range in the index.
        try connection.query(
            "SELECT \"key\", \"value\" FROM \(metaTable) WHERE \"key\" >= ?1 AND \"key\" < ?2",
            [.string(labelPrefix), .string("label/")]
        ) { row in
            labels[String(row.text(0).dropFirst(labelPrefix.count))] = row.text(1)
        }
        return labels
    }

    /// Sets the metadata value for `key`.
    static func setValue(_ value: String, for key: String, _ connection: SQLiteConnection) throws {
        try connection.run(
            "INSERT INTO \(metaTable) VALUES (?1, ?2) ON CONFLICT(\"key\") DO UPDATE SET \"value\" = excluded.\"value\"",
            [.string(key), .string(value)])
    }

    /// The schema kept in the store (empty for a new store).
    static func schema(_ connection: SQLiteConnection) throws -> ResolvedSchema {
        guard let json = try value(for: "schema", connection) else { return try ResolvedSchema.resolved(Schema()) }
        return try ResolvedSchema.resolved(try Schema(json: json))
    }

    /// The last value the sequence `name` handed out (0 when none).
    static func sequence(_ name: String, _ connection: SQLiteConnection) throws -> Int64 {
        if let value = connection.groupMemo?.value(of: name) { return value }
        let value =
            try connection.scalarInt(readSequenceSQL, [.string(name)]) ?? 0
        connection.groupMemo?.read(name, value)
        return value
    }

    /// Records that the sequence `name` has handed out every value up to `value` (in a group of
    /// saves, when the group commits: ``GroupMemo``).
    static func setSequence(_ name: String, to value: Int64, _ connection: SQLiteConnection) throws {
        if let memo = connection.groupMemo { return memo.set(name, to: value) }
        try writeSequence(name, to: value, connection)
    }

    /// Writes sequence `name`'s value.
    static func writeSequence(_ name: String, to value: Int64, _ connection: SQLiteConnection) throws {
        try connection.run(writeSequenceSQL, [.string(name), .int(value)])
    }

    // Made once: every save runs them, and making their text each time cost more than finding
    // their statement.
    private static let readValueSQL = "SELECT \"value\" FROM \(metaTable) WHERE \"key\" = ?1"
    private static let readSequenceSQL = "SELECT \"value\" FROM \(sequenceTable) WHERE \"name\" = ?1"
    private static let writeSequenceSQL =
        "INSERT INTO \(sequenceTable) VALUES (?1, ?2) ON CONFLICT(\"name\") DO UPDATE SET \"value\" = excluded.\"value\""
}
