import Foundation
import ModelCore

/// The values of one unique constraint as a dictionary key, equal exactly when the values are
/// equal as predicates see them: strings, URLs and JSON by their UTF-8 bytes (not by Swift's
/// canonical equivalence), numbers by value, UUIDs by their lowercase text.
struct ValueKey: Hashable {
    private enum Part: Hashable {
        case bytes([UInt8])
        case integer(Int64)
        case double(Double)
        case decimal(Decimal)
        case data(Data)
        case bool(Bool)
        case null
    }

    private let parts: [Part]

    init(_ values: [Value]) {
        parts = values.map { value in
            switch value {
            case .null: .null
            case .string(let s), .json(let s): .bytes(Array(s.utf8))
            case .url(let u): .bytes(Array(u.absoluteString.utf8))
            case .uuid(let u): .bytes(Array(u.lowercasedText.utf8))
            case .int(let v): .integer(v)
            case .double(let v): .double(v == 0 ? 0 : v)
            case .decimal(let v): .decimal(v)
            case .date(let t): .integer(t.microsecondsSince1970)
            case .data(let d): .data(d)
            case .bool(let b): .bool(b)
            }
        }
    }
}
