import Foundation
import ModelCore
import PostgresNIO

/// How attribute values are kept in PostgreSQL: each type in a column type of its own that
/// orders and compares as modeld does — dates as microseconds since 1970 (`bigint`, exact, as
/// on SQLite), decimals as `numeric`, UUIDs as `uuid`, data as `bytea`; strings, URLs and JSON
/// as text in the "C" collation, so that they order by their UTF-8 bytes as on SQLite.
enum PostgresValues {
    /// The column type of an attribute type.
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .string, .url, .json: "text COLLATE \"C\""
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
        switch value {
        case .null: bindings.appendNull()
        case .string(let text), .json(let text): bindings.append(text)
        case .int(let number): bindings.append(number)
        case .double(let number): bindings.append(number)
        case .bool(let flag): bindings.append(flag)
        case .date(let timestamp): bindings.append(timestamp.microsecondsSince1970)
        case .data(let bytes): bindings.append(ByteBuffer(bytes: bytes))
        case .uuid(let uuid): bindings.append(uuid)
        case .url(let url): bindings.append(url.absoluteString)
        case .decimal(let decimal): try bindings.append(decimal)
        }
    }

    /// The value of a cell of a column of `type`.
    static func value(_ cell: PostgresCell, as type: AttributeType) throws -> Value {
        guard cell.bytes != nil else { return .null }
        switch type {
        case .string: return .string(try cell.decode(String.self))
        case .json: return .json(try cell.decode(String.self))
        case .int: return .int(try cell.decode(Int64.self))
        case .double: return .double(try cell.decode(Double.self))
        case .bool: return .bool(try cell.decode(Bool.self))
        case .date: return .date(Timestamp(microsecondsSince1970: try cell.decode(Int64.self)))
        case .data: return .data(Data(buffer: try cell.decode(ByteBuffer.self)))
        case .uuid: return .uuid(try cell.decode(UUID.self))
        case .url:
            let text = try cell.decode(String.self)
            guard let url = URL(string: text) else {
                throw ModelError(.storageFailure, "a stored URL does not parse: '\(text)'")
            }
            return .url(url)
        case .decimal: return .decimal(try cell.decode(Decimal.self))
        }
    }

    /// A text cell (nil for NULL).
    static func text(_ cell: PostgresCell) throws -> String? {
        cell.bytes == nil ? nil : try cell.decode(String.self)
    }

    /// A bigint cell (nil for NULL).
    static func int(_ cell: PostgresCell) throws -> Int64? {
        cell.bytes == nil ? nil : try cell.decode(Int64.self)
    }
}
