import CSQLite
import ModelCore

/// One connection to the store's file, with its prepared-statement cache. A connection is used on
/// one serial queue only (``ConnectionQueue``); it is not Sendable.
final class SQLiteConnection {
    /// What the connection is for: the single writer, or one of the readers.
    enum Role { case writer, reader }

    /// How long a statement waits for another connection's lock before failing with busy.
    static let busyTimeoutMilliseconds: Int32 = 10_000
    /// The most statements kept prepared per connection.
    static let cacheCapacity = 256

    private(set) var handle: OpaquePointer?
    let path: String
    let role: Role
    private var cache: [String: SQLiteStatement] = [:]
    /// The schema whose overlay tables this connection has created (see ``OverlayTables``).
    var overlaySchemaHash: String?

    /// Opens `path` (creating the file when `role` is the writer), registers modeld's SQL
    /// functions and collation, and sets WAL, synchronous=FULL (writer) and the busy timeout.
    init(path: String, role: Role) throws(ModelError) {
        self.path = path
        self.role = role
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        if role == .writer { flags |= SQLITE_OPEN_CREATE }
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let error = ModelError.sqlite(code, db: db)
            sqlite3_close_v2(db)
            throw ModelError(error.code, "cannot open the store file \(path): \(error.message)", context: error.context.merging(["path": path]) { a, _ in a })
        }
        handle = db
        do throws(ModelError) {
            sqlite3_extended_result_codes(db, 1)
            sqlite3_busy_timeout(db, Self.busyTimeoutMilliseconds)
            try SQLiteFunctions.register(on: db)
            if role == .writer {
                let mode = try scalarText("PRAGMA journal_mode=WAL")
                guard mode.lowercased() == "wal" else {
                    throw ModelError(.storageFailure, "the store file \(path) cannot use write-ahead logging (journal mode is \(mode))",
                                     context: ["path": path])
                }
                try execute("PRAGMA synchronous=FULL")
            } else {
                try execute("PRAGMA temp_store=MEMORY")
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Finalizes every statement and closes the connection; later use fails with `closed`.
    func close() {
        cache.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// The open handle, or `closed`.
    func open() throws(ModelError) -> OpaquePointer {
        guard let handle else { throw ModelError(.closed, "the store is closed; open it again to use it") }
        return handle
    }

    /// Runs SQL without parameters or results (DDL, pragmas, transaction control); several
    /// statements may be separated by semicolons.
    func execute(_ sql: String) throws(ModelError) {
        let db = try open()
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(db, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(message)
            throw ModelError.sqlite(sqlite3_extended_errcode(db), message: text, sql: sql)
        }
    }

    /// Runs one statement with `parameters` (bound to `?1`, `?2`…), calling `row` for each row.
    func query(_ sql: String, _ parameters: [Value] = [], cached: Bool = true,
               row: (SQLiteStatement) throws -> Void) throws {
        let statement = try prepare(sql, cached: cached)
        statement.isInUse = true
        defer {
            statement.reset()
            statement.isInUse = false
        }
        try statement.bind(parameters)
        while try statement.step() { try row(statement) }
    }

    /// Runs one statement with `parameters` to completion, ignoring rows; returns the number of
    /// rows it changed.
    @discardableResult
    func run(_ sql: String, _ parameters: [Value] = [], cached: Bool = true) throws -> Int {
        try query(sql, parameters, cached: cached) { _ in }
        return Int(sqlite3_changes64(try open()))
    }

    /// The first column of the first row, as an optional integer.
    func scalarInt(_ sql: String, _ parameters: [Value] = []) throws -> Int64? {
        var result: Int64?
        try query(sql, parameters) { row in if result == nil { result = row.optionalInt64(0) } }
        return result
    }

    private func scalarText(_ sql: String) throws(ModelError) -> String {
        let statement = try prepare(sql, cached: false)
        guard try statement.step() else { return "" }
        return statement.text(0)
    }

    /// A prepared statement for `sql`: from the cache when `cached` and not already in use.
    func prepare(_ sql: String, cached: Bool = true) throws(ModelError) -> SQLiteStatement {
        if cached, let statement = cache[sql], !statement.isInUse { return statement }
        let db = try open()
        var raw: OpaquePointer?
        let flags = cached ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(db, sql, -1, flags, &raw, nil)
        guard code == SQLITE_OK, let raw else { throw ModelError.sqlite(code, db: db, sql: sql) }
        let statement = SQLiteStatement(handle: raw, sql: sql)
        if cached, cache[sql] == nil {
            if cache.count >= Self.cacheCapacity { cache = cache.filter { $0.value.isInUse } }
            cache[sql] = statement
        }
        return statement
    }

    /// Forgets every cached statement (after the schema changed).
    func clearCache() {
        cache = cache.filter { $0.value.isInUse }
    }

    /// Runs `body` in a transaction: `BEGIN IMMEDIATE` (takes the write lock at once, waiting up to
    /// the busy timeout for another process) when `write`, a deferred read transaction otherwise.
    /// Commits when `body` returns, rolls back when it throws.
    func transaction<T>(write: Bool, _ body: () throws -> T) throws -> T {
        try run(write ? "BEGIN IMMEDIATE" : "BEGIN")
        let result: T
        do {
            result = try body()
            try run("COMMIT")
        } catch {
            if let db = handle, sqlite3_get_autocommit(db) == 0 { _ = try? run("ROLLBACK") }
            throw error
        }
        return result
    }
}
