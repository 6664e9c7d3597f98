import Foundation

/// A value encodes as `null` or as an object with one key naming its type:
/// `{"int": 42}`, `{"string": "Paris"}`, `{"date": "2026-01-02T03:04:05.000000Z"}`,
/// `{"decimal": "12.50"}`, `{"data": "<base64>"}`. The tag keeps the type without a schema.
extension Value: Codable {
    private struct TypeKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
            return
        }
        let container = try decoder.container(keyedBy: TypeKey.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first,
            let type = AttributeType(rawValue: key.stringValue)
        else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "a value is null or an object with one key naming its type, such as {\"int\": 1}")
            )
        }
        switch type {
        case .int: self = .int(try container.decode(Int64.self, forKey: key))
        case .double: self = .double(try container.decode(Double.self, forKey: key))
        case .bool: self = .bool(try container.decode(Bool.self, forKey: key))
        case .string: self = .string(try container.decode(String.self, forKey: key))
        default:
            let text = try container.decode(String.self, forKey: key)
            guard let value = Value(parsing: text, as: type) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container,
                    debugDescription: "'\(text)' is not a valid \(type.rawValue)")
            }
            self = value
        }
    }

    public func encode(to encoder: any Encoder) throws {
        guard let type else {
            var single = encoder.singleValueContainer()
            try single.encodeNil()
            return
        }
        var container = encoder.container(keyedBy: TypeKey.self)
        let key = TypeKey(stringValue: type.rawValue)
        switch self {
        case .int(let v): try container.encode(v, forKey: key)
        case .double(let v): try container.encode(v, forKey: key)
        case .bool(let v): try container.encode(v, forKey: key)
        default: try container.encode(textForm ?? "", forKey: key)
        }
    }
}

extension Value {
    /// Decodes the untagged JSON form used where the type is known from the schema (a default
    /// value, say): numbers, strings, booleans, or the text form of the type as a string.
    public init(untagged container: any SingleValueDecodingContainer, as type: AttributeType) throws {
        if container.decodeNil() {
            self = .null
            return
        }
        switch type {
        case .int:
            self = .int(try container.decode(Int64.self))
        case .double:
            self = .double(try container.decode(Double.self))
        case .bool:
            self = .bool(try container.decode(Bool.self))
        case .decimal:
            if let number = try? container.decode(Double.self),
                let value = try? Value.double(number).converted(to: .decimal)
            {
                self = value
                return
            }
            fallthrough
        default:
            let text = try container.decode(String.self)
            guard let value = Value(parsing: text, as: type) else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "'\(text)' is not a valid \(type.rawValue)")
            }
            self = value
        }
    }

    /// Encodes the untagged form read by ``init(untagged:as:)``.
    public func encodeUntagged(to container: inout any SingleValueEncodingContainer) throws {
        switch self {
        case .null: try container.encodeNil()
        case .int(let v): try container.encode(v)
        case .double(let v): try container.encode(v)
        case .bool(let v): try container.encode(v)
        default: try container.encode(textForm ?? "")
        }
    }
}
