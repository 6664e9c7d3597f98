import Foundation
import ModelCore
import ModelStorage
import PostgresNIO

/// How attribute values are kept in PostgreSQL: each type in a column type of its own that
/// orders and compares as modeld does — dates as microseconds since 1970 (`bigint`, exact, as
/// on SQLite), decimals as `numeric`, UUIDs as `uuid`, data as `bytea`; strings, URLs and JSON
/// as text in the "C" collation, so that they order by their UTF-8 bytes as on SQLite.
enum PostgresValues {
    /// The column type of an attribute type.
    static func columnType(_ type: AttributeType) -> String {
        sqlType(type, collated: true)
    }

    /// The SQL type `type`'s values are kept and bound as; strings in the "C" collation when
    /// `collated`.
    static func sqlType(_ type: AttributeType, collated: Bool) -> String {
        switch type {
        case .string, .url, .json: collated ? "text COLLATE \"C\"" : "text"
        case .int, .date: "bigint"
        case .double: "double precision"
        case .bool: "boolean"
        case .data: "bytea"
        case .uuid: "uuid"
        case .decimal: "numeric"
        }
    }

    /// Appends `value` to `bindings` in its column's form.
    static func bind(_ value: Value, into bindings: inout PostgresBindings) throws {
        guard let encodable = encodable(value) else { return bindings.appendNull() }
        try bindings.append(encodable)
    }

    /// What `value` is bound as: the Swift value PostgresNIO encodes in its column's form; nil
    /// for NULL.
    private static func encodable(_ value: Value) -> (any PostgresEncodable)? {
        switch value {
        case .null: nil
        case .string(let text), .json(let text): text
        case .int(let number): number
        case .double(let number): number
        case .bool(let flag): flag
        case .date(let timestamp): timestamp.microsecondsSince1970
        case .data(let bytes): ByteBuffer(bytes: bytes)
        case .uuid(let uuid): uuid
        case .url(let url): url.absoluteString
        case .decimal(let decimal): decimal
        }
    }

    /// The SQL type ``bind(_:into:)`` binds `value` as; nil for NULL (bound untyped).
    static func boundType(_ value: Value) -> String? {
        value.type.map { sqlType($0, collated: false) }
    }

    /// `value` as ``bind(_:into:)`` binds it, for a prepared statement (``PreparedStatements``).
    static func data(_ value: Value) throws -> PostgresData {
        guard let encodable = encodable(value) else { return PostgresData(type: .null) }
        return try data(encodable)
    }

    /// `value` encoded as PostgresNIO binds it (type, binary format and bytes).
    static func data<T: PostgresEncodable>(_ value: T) throws -> PostgresData {
        var bytes = ByteBuffer()
        try value.encode(into: &bytes, context: .default)
        return PostgresData(type: T.psqlType, formatCode: T.psqlFormat, value: bytes)
    }

    /// The value of a cell of a column of `type`.
    static func value(_ cell: PostgresCell, as type: AttributeType) throws -> Value {
        guard cell.bytes != nil else { return .null }
        switch type {
        case .string: return .string(try decoded(cell, String.self))
        case .json: return .json(try decoded(cell, String.self))
        case .int: return .int(try decoded(cell, Int64.self))
        case .double: return .double(try decoded(cell, Double.self))
        case .bool: return .bool(try decoded(cell, Bool.self))
        case .date: return .date(Timestamp(microsecondsSince1970: try decoded(cell, Int64.self)))
        case .data: return .data(Data(buffer: try decoded(cell, ByteBuffer.self)))
        case .uuid: return .uuid(try decoded(cell, UUID.self))
        case .url:
            let text = try decoded(cell, String.self)
            guard let url = URL(string: text) else {
                throw ModelError(.storageFailure, "a stored URL does not parse: '\(text)'")
            }
            return .url(url)
        case .decimal: return .decimal(try decoded(cell, Decimal.self))
        }
    }

    /// `cell` decoded as a `T`. Every statement asks for its rows in binary (PostgresNIO's Bind
    /// always does), but a statement prepared through PostgresNIO's `prepare(query:)`
    /// (``PreparedStatements``) labels them text, as the server describes a statement before
    /// any Bind: the label is set right first.
    static func decoded<T: PostgresDecodable>(_ cell: PostgresCell, _ type: T.Type) throws -> T {
        var cell = cell
        cell.format = .binary
        return try cell.decode(T.self)
    }

    /// A text cell (nil for NULL).
    static func text(_ cell: PostgresCell) throws -> String? {
        cell.bytes == nil ? nil : try decoded(cell, String.self)
    }

    /// A bigint cell (nil for NULL).
    static func int(_ cell: PostgresCell) throws -> Int64? {
        cell.bytes == nil ? nil : try decoded(cell, Int64.self)
    }
}

/// PostgreSQL's text cannot hold U+0000 (SQLite's can): a session is refused such a string when
/// it stages it, as a save of it would be, rather than keep it staged where every read it makes
/// (each shows what it stages) would fail on it.
extension PostgresStore: StorageValueChecking {
    public func checkStorable(_ value: Value, entity: String, attribute: String) throws(ModelError) {
        try PostgresValues.checkStorable(value, entity: entity, attribute: attribute)
    }
}

extension PostgresStagedMigration: StorageValueChecking {
    func checkStorable(_ value: Value, entity: String, attribute: String) throws(ModelError) {
        try PostgresValues.checkStorable(value, entity: entity, attribute: attribute)
    }
}

extension PostgresValues {
    static func checkStorable(_ value: Value, entity: String, attribute: String) throws(ModelError) {
        guard case .string(let text) = value, text.utf8.contains(0) else { return }
        throw ModelError(
            .invalidArgument,
            "PostgreSQL cannot store this text: '\(entity).\(attribute)' holds the NUL character (U+0000); take it out, or keep such bytes in a data attribute",
            context: ["entity": entity, "attribute": attribute])
    }
}
