import CSQLite
import Foundation

/// The limit: the same rows and queries through SQLite's C API in this process, with the
/// settings modeld's SQLite backend uses (WAL, synchronous=FULL, no memory statistics): rows are
/// written on one connection and read on another, which maps the file into memory as modeld's
/// readers do.
final class SQLiteBaseline {
    private var db: OpaquePointer?
    private let path: String
    private var readerDB: OpaquePointer?
    private static let configureSQLite: Void = { _ = csqlite_disable_memory_statistics() }()

    init(path: String) throws {
        Self.configureSQLite
        self.path = path
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchError("cannot open \(path)") }
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=FULL")
        try execute(Dataset.sql)
    }

    deinit {
        sqlite3_close(readerDB)
        sqlite3_close(db)
    }

    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, sql, nil, nil, &message) == SQLITE_OK else {
            defer { sqlite3_free(message) }
            throw BenchError("SQLite: \(message.map { String(cString: $0) } ?? "error") in \(sql)")
        }
    }

    /// The reading connection, opened on first use with modeld's reader settings.
    private func reader() throws -> OpaquePointer? {
        if let readerDB { return readerDB }
        guard sqlite3_open_v2(path, &readerDB, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
            csqlite_map_file_for_reading(readerDB) == SQLITE_OK
        else { throw BenchError("cannot open \(path) to read") }
        return readerDB
    }

    private func prepare(_ sql: String, reading: Bool = false) throws -> OpaquePointer {
        let db = reading ? try reader() : db
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else {
            throw BenchError("SQLite cannot prepare \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }

    /// Inserts rows `range` in one transaction; returns the time it took.
    func insert(_ range: ClosedRange<Int>) throws -> Duration {
        let clock = ContinuousClock(), start = clock.now
        let statement = try prepare(
            "INSERT INTO item(id, name, category, score, price, created) VALUES (?, ?, ?, ?, ?, ?)")
        defer { sqlite3_finalize(statement) }
        try execute("BEGIN")
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for i in range {
            let row = Dataset.row(i)
            sqlite3_bind_int64(statement, 1, Int64(i))
            sqlite3_bind_text(statement, 2, row.name, -1, transient)
            sqlite3_bind_text(statement, 3, row.category, -1, transient)
            sqlite3_bind_int64(statement, 4, Int64(row.score))
            sqlite3_bind_double(statement, 5, row.price)
            sqlite3_bind_double(statement, 6, row.created.timeIntervalSince1970)
            guard sqlite3_step(statement) == SQLITE_DONE else {
                throw BenchError("SQLite insert: \(String(cString: sqlite3_errmsg(db)))")
            }
            sqlite3_reset(statement)
        }
        try execute("COMMIT")
        return clock.now - start
    }

    /// Reads `count` rows by primary key, each read timed.
    func pointReads(_ count: Int, rows: Int) throws -> Latencies {
        let statement = try prepare(
            "SELECT name, category, score, price, created FROM item WHERE id = ?", reading: true)
        defer { sqlite3_finalize(statement) }
        var picker = RowPicker(rows: rows, seed: 42)
        var latencies = Latencies()
        let clock = ContinuousClock()
        for _ in 0..<count {
            let start = clock.now
            sqlite3_bind_int64(statement, 1, Int64(picker.next()))
            guard sqlite3_step(statement) == SQLITE_ROW else { throw BenchError("SQLite read found no row") }
            _ = sqlite3_column_text(statement, 0)
            _ = sqlite3_column_text(statement, 1)
            _ = sqlite3_column_int64(statement, 2)
            _ = sqlite3_column_double(statement, 3)
            _ = sqlite3_column_double(statement, 4)
            sqlite3_reset(statement)
            latencies.record(clock.now - start)
        }
        return latencies
    }

    /// The indexed query, `count` times with different bounds, each timed (rows read out).
    func indexedQueries(_ count: Int) throws -> Latencies {
        let statement = try prepare(
            "SELECT id, name, category, score, price, created FROM item WHERE score >= ? ORDER BY score LIMIT 50",
            reading: true)
        defer { sqlite3_finalize(statement) }
        var latencies = Latencies()
        let clock = ContinuousClock()
        for n in 0..<count {
            let start = clock.now
            sqlite3_bind_int64(statement, 1, Int64(Dataset.queryBound(n)))
            var rows = 0
            while sqlite3_step(statement) == SQLITE_ROW {
                _ = sqlite3_column_int64(statement, 0)
                _ = sqlite3_column_text(statement, 1)
                _ = sqlite3_column_text(statement, 2)
                _ = sqlite3_column_int64(statement, 3)
                _ = sqlite3_column_double(statement, 4)
                _ = sqlite3_column_double(statement, 5)
                rows += 1
            }
            sqlite3_reset(statement)
            latencies.record(clock.now - start)
            guard rows == 50 else { throw BenchError("SQLite indexed query returned \(rows) rows") }
        }
        return latencies
    }

    /// Counts per category.
    func groupedCount() throws -> (groups: Int, Duration) {
        let clock = ContinuousClock(), start = clock.now
        let statement = try prepare("SELECT category, count(*) FROM item GROUP BY category", reading: true)
        defer { sqlite3_finalize(statement) }
        var groups = 0
        while sqlite3_step(statement) == SQLITE_ROW { groups += 1 }
        return (groups, clock.now - start)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
