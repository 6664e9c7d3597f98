import CSQLite
import Foundation
import ModelCore

/// A prepared statement: bind values, step through rows, read columns. Used on its connection's
/// queue only; not Sendable.
final class SQLiteStatement {
    /// The `sqlite3_stmt`.
    let handle: OpaquePointer
    /// The SQL text, for error messages.
    let sql: String
    /// Whether a caller is stepping it right now (a cached statement is not lent out twice).
    var isInUse = false
    /// Whether values may still be bound from a use that was not followed by ``reset()``.
    private(set) var holdsBindings = false

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `values` to `?1`, `?2`… in order.
    func bind(_ values: [Value]) throws(ModelError) {
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds one value, stored as the semantics page says: dates as microseconds, bools as 0/1,
    /// UUIDs as lowercase text, decimals as their canonical text, data as a blob.
    func bind(_ value: Value, at index: Int32) throws(ModelError) {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, index)
        case .int(let v): code = sqlite3_bind_int64(handle, index, v)
        case .double(let v): code = sqlite3_bind_double(handle, index, v)
        case .bool(let v): code = sqlite3_bind_int64(handle, index, v ? 1 : 0)
        case .date(let v): code = sqlite3_bind_int64(handle, index, v.microsecondsSince1970)
        case .string(let v), .json(let v): code = bindText(v, at: index)
        case .uuid(let v): code = bindText(v.lowercasedText, at: index)
        case .url(let v): code = bindText(v.absoluteString, at: index)
        case .decimal(let v): code = bindText(v.canonicalText, at: index)
        case .data(let v):
            if v.isEmpty {
                // A zero-length blob with a nil pointer would bind NULL.
                code = sqlite3_bind_zeroblob(handle, index, 0)
            } else {
                code = v.withUnsafeBytes { raw in
                    sqlite3_bind_blob64(handle, index, raw.baseAddress, sqlite3_uint64(raw.count), csqlite_transient())
                }
            }
        }
        guard code == SQLITE_OK else { throw ModelError.sqlite(code, db: sqlite3_db_handle(handle), sql: sql) }
    }

    private func bindText(_ text: String, at index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { buffer in
            // An empty buffer may have no base address, which would bind NULL instead of "".
            guard let base = buffer.baseAddress, buffer.count > 0 else {
                return sqlite3_bind_text(handle, index, "", 0, csqlite_transient())
            }
            return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { chars in
                sqlite3_bind_text64(
                    handle, index, chars, sqlite3_uint64(buffer.count), csqlite_transient(), UInt8(SQLITE_UTF8))
            }
        }
    }

    /// Steps once: true when a row is ready, false when the statement is done.
    func step() throws(ModelError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw ModelError.sqlite(code, db: sqlite3_db_handle(handle), sql: sql)
        }
    }

    /// Resets the statement and clears its bindings, ready for the next use.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        holdsBindings = false
    }

    /// Resets the statement to run again, keeping its bindings (``holdsBindings``).
    func rewind() {
        sqlite3_reset(handle)
        holdsBindings = true
    }

    // MARK: Columns

    /// Whether column `index` of the current row is NULL.
    func isNull(_ index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

    /// Column `index` as an integer.
    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// Column `index` as a double.
    func double(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// Column `index` as text (UTF-8, embedded NULs kept).
    func text(_ index: Int32) -> String {
        withBytes(index, isText: true) { String(decoding: $0, as: UTF8.self) }
    }

    /// `body` run over the bytes of column `index`, read as text (UTF-8) or as a blob, without a copy.
    /// The column is looked up once, through its value (``columnValue(_:)``).
    func withBytes<R>(_ index: Int32, isText: Bool, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(Self.bytes(of: columnValue(index), isText: isText))
    }

    /// Whether column `index`, read as text, is `expected`'s bytes (without making a string of it).
    func textEquals(_ index: Int32, _ expected: [UInt8]) -> Bool {
        withBytes(index, isText: true) { text in
            // ! both have a base when not empty: their counts are equal.
            text.count == expected.count
                && expected.withUnsafeBufferPointer { expected in
                    text.isEmpty || memcmp(text.baseAddress!, expected.baseAddress!, text.count) == 0
                }
        }
    }

    /// Column `index` as bytes.
    func data(_ index: Int32) -> Data {
        withBytes(index, isText: false) { Data($0) }
    }

    /// Column `index` as an optional integer.
    func optionalInt64(_ index: Int32) -> Int64? { isNull(index) ? nil : int64(index) }

    /// The SQLite storage class of column `index` (`SQLITE_INTEGER`, `SQLITE_TEXT`…).
    func storageClass(_ index: Int32) -> Int32 { sqlite3_column_type(handle, index) }
}
