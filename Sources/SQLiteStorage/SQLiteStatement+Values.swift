import CSQLite
import Foundation
import ModelCore

extension SQLiteStatement {
    /// Column `index` read back as a value of `type` (the inverse of ``bind(_:at:)``); NULL is
    /// ``Value/null``. A stored value that cannot be read as `type` (a foreign tool wrote it) is
    /// `storageFailure`.
    func value(_ index: Int32, as type: AttributeType) throws(ModelError) -> Value {
        try cell(index, as: type).value
    }

    /// Column `index` as a cell of an attribute of `type` (``RowCell``), read as ``value(_:as:)``
    /// reads it but without making a value where a sink can write the column as it lies:
    /// numbers, and strings that are ASCII (other text is made a string, mending what is not
    /// UTF-8). Inlined into both callers: called from ``value(_:as:)`` as well, it was no longer
    /// inlined into the daemon's row writing, which cost 150 instructions an object.
    ///
    /// The column is read through its `sqlite3_value` (``columnValue(_:)``): one call that looks
    /// the column up, then reads that take no lock, where `sqlite3_column_type` and
    /// `sqlite3_column_int64` (or `_text` and `_bytes`) each looked it up again (69 instructions
    /// a cell fewer, callgrind).
    @inline(__always)
    func cell(_ index: Int32, as type: AttributeType) throws(ModelError) -> RowCell {
        let column = columnValue(index)
        let storage = sqlite3_value_type(column)
        if storage == SQLITE_NULL { return .null }
        switch type {
        case .int:
            // An int sum that overflowed comes back as a double, as arithmetic does.
            return storage == SQLITE_FLOAT ? .double(sqlite3_value_double(column)) : .int(sqlite3_value_int64(column))
        case .double: return .double(sqlite3_value_double(column))
        case .bool, .date: return .stored(integer: sqlite3_value_int64(column), as: type)
        case .data: return .value(.data(data(index)))
        case .string:
            // SQLite's own bytes, valid until the statement moves on.
            let bytes = Self.bytes(of: column, isText: true)
            if UTF8Bytes.isASCII(bytes) { return .text(bytes) }
            return .value(.string(String(decoding: bytes, as: UTF8.self)))
        case .json, .uuid, .url, .decimal:
            let text = text(index)
            guard let value = Value.stored(text: text, as: type) else { throw unreadable(text, as: type, index) }
            return .value(value)
        }
    }

    /// Column `index` of the current row as SQLite holds it: an unprotected `sqlite3_value`,
    /// valid until the statement moves on. Reading it with `sqlite3_value_*` is safe here
    /// because a connection is only ever used by one thread at a time (opened without SQLite's
    /// own mutex, `SQLITE_OPEN_NOMUTEX`), which is all that protection is about.
    @inline(__always)
    func columnValue(_ index: Int32) -> OpaquePointer? {
        sqlite3_column_value(handle, index)
    }

    /// The bytes of a column's `value` (``columnValue(_:)``), read as text (UTF-8) or as a blob,
    /// where SQLite keeps them: valid until the statement moves on.
    @inline(__always)
    static func bytes(of value: OpaquePointer?, isText: Bool) -> UnsafeBufferPointer<UInt8> {
        // The bytes before their length, as SQLite asks: reading them as text may convert them.
        let start = isText ? UnsafeRawPointer(sqlite3_value_text(value)) : sqlite3_value_blob(value)
        let count = Int(sqlite3_value_bytes(value))
        guard let start, count > 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: count)
    }

    private func unreadable(_ text: String, as type: AttributeType, _ index: Int32) -> ModelError {
        let column = sqlite3_column_name(handle, index).map { String(cString: $0) } ?? "\(index)"
        return ModelError(
            .storageFailure,
            "the stored value '\(text.prefix(80))' of column \(column) is not a valid \(type.rawValue)",
            context: ["column": column, "sql": String(sql.prefix(2000))])
    }
}

extension RowCell {
    /// A value of `type` stored as an integer (see ``SQLiteStatement/bind(_:at:)``), read back:
    /// bools as 0/1, dates as microseconds, ints as they are.
    static func stored(integer: Int64, as type: AttributeType) -> RowCell {
        switch type {
        case .bool: .bool(integer != 0)
        case .date: .date(microseconds: integer)
        default: .int(integer)
        }
    }
}

extension Value {
    /// A value of `type` stored as an integer, read back (``RowCell/stored(integer:as:)``).
    static func stored(integer: Int64, as type: AttributeType) -> Value {
        RowCell.stored(integer: integer, as: type).value
    }

    /// A value of `type` stored as text, read back; nil when the text is not one (another tool
    /// wrote it).
    static func stored(text: String, as type: AttributeType) -> Value? {
        switch type {
        case .json: .json(text)
        case .uuid: UUID(text: text).map(Value.uuid)
        case .url: URL(string: text).map(Value.url)
        case .decimal: DecimalText.parse(text).map(Value.decimal)
        default: .string(text)
        }
    }
}
