import CSQLite
import Foundation
import ModelCore
import ModelStorage

/// One connection to the store's file, with its prepared-statement cache. A connection is used on
/// one serial queue only (``ConnectionQueue``); it is not Sendable.
final class SQLiteConnection {
    /// What the connection is for: the single writer, or one of the readers.
    enum Role { case writer, reader }

    /// How long a statement waits for another connection's lock before failing with busy.
    static let busyTimeoutMilliseconds: Int32 = 10_000
    /// The most statements kept prepared per connection.
    static let cacheCapacity = 256

    /// Process-wide settings, made once before the first connection opens: no memory
    /// statistics, whose mutex every allocation of every connection takes. perf of 16 clients'
    /// point reads found the daemon's two event loops waiting on each other there (about three
    /// in ten of the daemon's futex calls).
    private static let configureSQLite: Void = { _ = csqlite_disable_memory_statistics() }()

    /// The VFS the writer opens its file through: the default one with the writes to the WAL
    /// gathered into one per commit (`Sources/CSQLite/wal_buffer.h`); nil, for the default
    /// itself, if it could not be registered.
    private static let writerVFS: String? =
        csqlite_wal_buffer_register() == SQLITE_OK ? CSQLITE_WAL_BUFFER_VFS : nil

    private(set) var handle: OpaquePointer?
    let path: String
    let role: Role
    private var cache: [StatementKey: SQLiteStatement] = [:]
    /// The schema whose overlay tables this connection has created (see ``OverlayTables``).
    var overlaySchemaHash: String?
    /// The writer's, while a group of saves runs in its transaction (``SaveBatcher``).
    var groupMemo: GroupMemo?
    /// What ``stopStatements(when:)`` watches.
    private var cancellationFlag: CancellationFlag?
    /// A new store's file whose first writes are not yet synced (see ``finishCreation()``).
    private(set) var unsyncedNew: NewFile?

    /// How a new store's file starts.
    enum NewFile {
        /// Empty: SQLite writes its first page when it switches the file to WAL.
        case empty
        /// Already a small WAL database (``EmptyDatabaseImage``, a dropped store's file emptied
        /// for the next), beside no WAL or one with no frame: only the WAL is written.
        case emptyDatabase
    }
    /// The `modeld_group_count` function's table (see ``HashAggregate``).
    let groupCounter = GroupCounter()
    /// The read transaction a reader keeps between jobs, or begins for one (``ReadHold``).
    var readHold = ReadHold.none
    /// The first region of the file's shared memory, once mapped (``walIndexRegion()``).
    private var sharedRegion: UnsafePointer<UInt8>?
    /// The writer's file as it opened it (device and inode), to tell when another process has
    /// deleted or replaced it (``beginWrite()``).
    private var openedFile: (device: UInt64, inode: UInt64)?

    /// Opens `path` (creating the file when `role` is the writer, through ``writerVFS``),
    /// registers modeld's SQL functions and collation, and sets WAL, synchronous=FULL (writer),
    /// the memory map of the file (readers: ``csqlite_map_file_for_reading``) and the busy
    /// timeout.
    init(path: String, role: Role) throws(ModelError) {
        self.path = path
        self.role = role
        Self.configureSQLite
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        if role == .writer { flags |= SQLITE_OPEN_CREATE }
        let code = sqlite3_open_v2(path, &db, flags, role == .writer ? Self.writerVFS : nil)
        guard code == SQLITE_OK, let db else {
            let error = ModelError.sqlite(code, db: db)
            sqlite3_close_v2(db)
            throw ModelError(
                error.code, "cannot open the store file \(path): \(error.message)",
                context: error.context.merging(["path": path]) { a, _ in a })
        }
        handle = db
        do throws(ModelError) {
            sqlite3_extended_result_codes(db, 1)
            sqlite3_busy_timeout(db, Self.busyTimeoutMilliseconds)
            try SQLiteFunctions.register(on: db)
            try groupCounter.register(on: db)
            if role == .writer {
                // A new, empty file is switched to WAL, and its first transaction written,
                // without SQLite syncing each step (a rollback journal, then the WAL's header
                // and its commit, each file's directory entry: seven syncs); what was written is
                // synced once at the end, by ``finishCreation()``. The switch keeps its rollback
                // journal in memory rather than in a file made and deleted at once. A file that
                // is already an empty WAL database skips the switch.
                unsyncedNew = Self.newFile(at: path)
                switch unsyncedNew {
                case .empty?: try execute("PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY")
                case .emptyDatabase?: try execute("PRAGMA synchronous=OFF")
                case nil: break
                }
                let mode = try scalarText("PRAGMA journal_mode=WAL")
                guard mode.lowercased() == "wal" else {
                    throw ModelError(
                        .storageFailure,
                        "the store file \(path) cannot use write-ahead logging (journal mode is \(mode))",
                        context: ["path": path])
                }
                if unsyncedNew == nil { try execute("PRAGMA synchronous=FULL") }
                openedFile = Self.identity(of: path)
            }
            if role == .reader {
                let code = csqlite_map_file_for_reading(db)
                guard code == SQLITE_OK else { throw ModelError.sqlite(code, db: db) }
            }
            // Readers keep SQLite's default temporary store: a sort or GROUP BY over many rows
            // then works in the page cache and spills to a temporary file, instead of holding
            // every row in malloc'd memory (temp_store=MEMORY made a grouped count over 1M rows
            // 1.5-4x slower in the daemon, and its memory grow with the rows).
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Makes what was written to a new file since it was opened durable (the file if it was
    /// empty, the WAL, their directory), and turns on synchronous=FULL for every later commit.
    /// The writer's first job calls it, after the transaction that prepares the store; nothing
    /// for a file that was not new.
    ///
    /// The WAL is synced through SQLite (``csqlite_sync_wal``), which also syncs the directory
    /// the first time, as it would at the store's first commit otherwise: three syncs for a new
    /// store and one for its first save, where syncing the WAL and the directory by hand left
    /// SQLite's directory sync to the first save (three and two). A file that was already an
    /// empty database was not written: two syncs.
    func finishCreation() throws(ModelError) {
        guard let unsyncedNew else { return }
        // Both through SQLite's descriptors: another descriptor of the database file, closed,
        // would drop this process's locks on it (``csqlite_sync_database``).
        func sync(_ what: String, _ body: (OpaquePointer) -> Int32) throws(ModelError) {
            let code = body(try open())
            guard code == SQLITE_OK else {
                throw ModelError(
                    .storageFailure, "cannot sync \(what) to disk: \(String(cString: sqlite3_errstr(code)))",
                    context: ["path": path])
            }
        }
        if unsyncedNew == .empty { try sync("the new store file \(path)", csqlite_sync_database) }
        // The transaction that prepared the store left the WAL open on this connection.
        try sync("the new store's write-ahead log \(path)-wal", csqlite_sync_wal)
        try execute("PRAGMA synchronous=FULL")
        self.unsyncedNew = nil
    }

    /// Makes every statement stop with SQLITE_INTERRUPT while `flag` is set or out of its
    /// budget (SQLite's progress handler, every ``progressSteps`` virtual machine steps). The
    /// connection keeps the flag.
    func stopStatements(when flag: CancellationFlag) {
        cancellationFlag = flag
        sqlite3_progress_handler(
            handle, Self.progressSteps,
            { context in
                Unmanaged<CancellationFlag>.fromOpaque(context!).takeUnretainedValue().shouldStop() ? 1 : 0
            }, Unmanaged.passUnretained(flag).toOpaque())
    }

    /// Virtual machine steps between two calls of the progress handler.
    static let progressSteps: Int32 = 1_000

    /// Finalizes every statement and closes the connection; later use fails with `closed`. With
    /// `checkpoint` false the last connection to the file does not copy the WAL back into it (the
    /// file is about to be deleted).
    func close(checkpoint: Bool = true) {
        endRead()
        sharedRegion = nil
        cache.removeAll()
        if let handle {
            if !checkpoint { csqlite_skip_checkpoint_on_close(handle) }
            sqlite3_close_v2(handle)
        }
        handle = nil
    }

    /// The first region of the file's shared memory (`csqlite_wal_index_region`), where the
    /// WAL-index header is: kept once mapped, which it stays while the connection is open.
    func walIndexRegion() -> UnsafePointer<UInt8>? {
        if let sharedRegion { return sharedRegion }
        guard let handle else { return nil }
        sharedRegion = csqlite_wal_index_region(handle)
        return sharedRegion
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
    func query(
        _ sql: String, _ parameters: [Value] = [], cached: Bool = true,
        row: (SQLiteStatement) throws -> Void
    ) throws {
        try withStatement(sql, cached: cached) { statement in
            try statement.bind(parameters)
            while try statement.step() { try row(statement) }
        }
    }

    /// Runs one statement with `parameters` to completion, ignoring rows; returns the number of
    /// rows it changed.
    @discardableResult
    func run(_ sql: String, _ parameters: [Value] = [], cached: Bool = true) throws -> Int {
        try query(sql, parameters, cached: cached) { _ in }
        return Int(sqlite3_changes64(try open()))
    }

    /// Runs `sql` once for each of `rows`, `bind` setting its parameters each time: one
    /// statement, prepared (or taken from the cache) once for all of them. When `bind` sets
    /// every parameter of the statement for every row (`bindsEveryParameter`), they are never
    /// cleared (`sqlite3_clear_bindings`, about 600 instructions a row or more, as many
    /// parameters as the statement has): each row's replace the last's, and the statement keeps
    /// the last row's until a use that does not set them all clears them first.
    func runEach<Rows: Sequence>(
        _ sql: String, over rows: Rows, bindsEveryParameter: Bool = false,
        bind: (Rows.Element, SQLiteStatement) throws -> Void
    ) throws {
        try withStatement(sql, cached: true, bindsEveryParameter: bindsEveryParameter) { statement in
            for row in rows {
                try bind(row, statement)
                while try statement.step() {}
                if bindsEveryParameter { statement.rewind() } else { statement.reset() }
            }
        }
    }

    /// Lends `body` the statement for `sql`, marked in use (so the cache does not lend it twice),
    /// and resets it afterwards, clearing its bindings unless `body` sets every parameter (then
    /// they are cleared before a use that does not).
    private func withStatement(
        _ sql: String, cached: Bool, bindsEveryParameter: Bool = false, _ body: (SQLiteStatement) throws -> Void
    ) throws {
        let statement = try prepare(sql, cached: cached)
        statement.isInUse = true
        if !bindsEveryParameter && statement.holdsBindings { statement.reset() }
        defer {
            if bindsEveryParameter { statement.rewind() } else { statement.reset() }
            statement.isInUse = false
        }
        try body(statement)
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
        let key = StatementKey(sql)
        if cached, let statement = cache[key], !statement.isInUse { return statement }
        let db = try open()
        var raw: OpaquePointer?
        let flags = cached ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(db, sql, -1, flags, &raw, nil)
        guard code == SQLITE_OK, let raw else { throw ModelError.sqlite(code, db: db, sql: sql) }
        let statement = SQLiteStatement(handle: raw, sql: sql)
        if cached, cache[key] == nil {
            if cache.count >= Self.cacheCapacity { cache = cache.filter { $0.value.isInUse } }
            cache[key] = statement
        }
        return statement
    }

    /// Forgets every cached statement (after the schema changed).
    func clearCache() {
        cache = cache.filter { $0.value.isInUse }
    }

    /// Whether a transaction is open (SQLite rolls one back by itself after some errors: a full
    /// disk, an interrupted write).
    var isInTransaction: Bool {
        handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }

    /// Begins a write transaction (`BEGIN IMMEDIATE`, which takes the write lock at once, waiting
    /// up to the busy timeout for another process), refused with `notFound` when the store's file
    /// is no longer the one this connection opened: another daemon sharing it dropped it (or
    /// something replaced it), and what was written to the deleted file would be lost when it
    /// is closed, though acknowledged.
    func beginWrite() throws {
        try run("BEGIN IMMEDIATE")
        guard let openedFile, let now = Self.identity(of: path), now != openedFile else { return }
        _ = try? run("ROLLBACK")
        throw ModelError(
            .notFound,
            "the store's file \(path) was deleted or replaced since this daemon opened it: it was dropped (by another daemon sharing it?); nothing was saved",
            context: ["path": path])
    }

    /// The device and inode of the file at `path`; for a file that is not there, ones no file has.
    private static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return errno == ENOENT ? (0, 0) : nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Runs `body` in a transaction: a write one (``beginWrite()``) when `write`, a deferred read
    /// transaction otherwise. Commits when `body` returns, rolls back when it throws.
    func transaction<T>(write: Bool, _ body: () throws -> T) throws -> T {
        // Inside a transaction already (a staged migration's), a savepoint: undone alone on error.
        if isInTransaction { return try savepoint(body) }
        if write { try beginWrite() } else { try run("BEGIN") }
        let result: T
        do {
            result = try body()
            try run("COMMIT")
        } catch {
            if isInTransaction { _ = try? run("ROLLBACK") }
            throw error
        }
        return result
    }

    /// Runs `body` in a savepoint of the open transaction: released when it returns, rolled back
    /// to (and the transaction kept) when it throws.
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        try run("SAVEPOINT nested")
        do {
            let result = try body()
            try run("RELEASE nested")
            return result
        } catch {
            if isInTransaction {
                _ = try? run("ROLLBACK TO nested")
                _ = try? run("RELEASE nested")
            }
            throw error
        }
    }
}
