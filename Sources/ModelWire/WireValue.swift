import Foundation
import ModelCore

extension Value {
    /// Reads a wire value. Text forms (UUID, URL, decimal, JSON) must be valid; a message with no
    /// field set is nil.
    public init(wire: Modeld_V1_Value) throws(ModelError) {
        switch wire.kind {
        case nil: self = .null
        case .stringValue(let text): self = .string(text)
        case .intValue(let number): self = .int(number)
        case .doubleValue(let number): self = .double(number)
        case .boolValue(let flag): self = .bool(flag)
        case .dateMicros(let micros): self = .date(Timestamp(microsecondsSince1970: micros))
        case .dataValue(let bytes): self = .data(bytes)
        case .uuidValue(let text): self = try Self.parse(text, as: .uuid)
        case .urlValue(let text): self = try Self.parse(text, as: .url)
        case .decimalValue(let text): self = try Self.parse(text, as: .decimal)
        case .jsonValue(let text): self = try Self.parse(text, as: .json)
        }
    }

    static func parse(_ text: String, as type: AttributeType) throws(ModelError) -> Value {
        guard let value = Value(parsing: text, as: type) else {
            let shown = text.count > 60 ? String(text.prefix(57)) + "..." : text
            let note =
                type == .decimal
                ? " (digits, a point and an exponent, with at most \(Value.maximumDecimalDigits) significant digits)"
                : ""
            throw ModelError(
                .typeMismatch, "\(type.rawValue)_value \"\(shown)\" is not a valid \(type.rawValue)\(note)",
                context: ["expected": type.rawValue])
        }
        return value
    }

    /// The wire form of this value.
    public var wire: Modeld_V1_Value {
        var wire = Modeld_V1_Value()
        switch self {
        case .null: break
        case .string(let text): wire.stringValue = text
        case .int(let number): wire.intValue = number
        case .double(let number): wire.doubleValue = number
        case .bool(let flag): wire.boolValue = flag
        case .date(let timestamp): wire.dateMicros = timestamp.microsecondsSince1970
        case .data(let bytes): wire.dataValue = bytes
        case .uuid(let uuid): wire.uuidValue = uuid.lowercasedText
        case .url(let url): wire.urlValue = url.absoluteString
        case .decimal(let decimal): wire.decimalValue = decimal.canonicalText
        case .json(let text): wire.jsonValue = text
        }
        return wire
    }
}

extension Dictionary where Key == String, Value == ModelCore.Value {
    /// Reads a map of wire values; an error names the key.
    public init(wire: [String: Modeld_V1_Value]) throws(ModelError) {
        var values: [String: ModelCore.Value] = [:]
        for (name, value) in wire {
            do {
                values[name] = try ModelCore.Value(wire: value)
            } catch {
                throw error.naming(property: name)
            }
        }
        self = values
    }

    /// The wire form of a map of values.
    public var wire: [String: Modeld_V1_Value] { mapValues(\.wire) }
}

extension PersistentIdentifier {
    /// Parses a URI from the wire, checking that it belongs to `storeIdentifier` when given.
    public init(wire uri: String, in storeIdentifier: UUID?) throws(ModelError) {
        if let storeIdentifier {
            try self.init(uri: uri, in: storeIdentifier)
        } else {
            try self.init(uri: uri)
        }
    }
}

extension RelationshipValue {
    /// Reads a relationship value; URIs must belong to `storeIdentifier` when given.
    public init(wire: Modeld_V1_RelationshipValue, in storeIdentifier: UUID?) throws(ModelError) {
        switch wire.kind {
        case .toOne(let uri):
            self = .toOne(uri.isEmpty ? nil : try PersistentIdentifier(wire: uri, in: storeIdentifier))
        case .toMany(let list):
            var ids: [PersistentIdentifier] = []
            for uri in list.uris { ids.append(try PersistentIdentifier(wire: uri, in: storeIdentifier)) }
            self = .toMany(ids)
        case nil:
            throw ModelError.relationshipWithoutKind
        }
    }

    /// The wire form of this relationship value.
    public var wire: Modeld_V1_RelationshipValue {
        var wire = Modeld_V1_RelationshipValue()
        switch self {
        case .toOne(let id): wire.toOne = id?.uriRepresentation ?? ""
        case .toMany(let ids): wire.toMany = Modeld_V1_ObjectList.with { $0.uris = ids.map(\.uriRepresentation) }
        }
        return wire
    }
}

extension ObjectSnapshot {
    /// Reads an object from the wire.
    public init(wire: Modeld_V1_ObjectSnapshot, in storeIdentifier: UUID? = nil) throws(ModelError) {
        var relationships: [String: RelationshipValue] = [:]
        for (name, value) in wire.relationships {
            relationships[name] = try RelationshipValue(wire: value, in: storeIdentifier)
        }
        self.init(
            id: try PersistentIdentifier(wire: wire.uri, in: storeIdentifier), version: wire.version,
            attributes: try [String: Value](wire: wire.attributes), relationships: relationships)
    }

    /// The wire form of this object.
    public var wire: Modeld_V1_ObjectSnapshot {
        var wire = Modeld_V1_ObjectSnapshot()
        wire.uri = id.uriRepresentation
        wire.version = version
        wire.attributes = attributes.wire
        wire.relationships = relationships.mapValues(\.wire)
        return wire
    }
}

extension ModelError {
    /// A relationship value on the wire that sets neither of its kinds.
    static let relationshipWithoutKind = ModelError(
        .invalidArgument, "a relationship value must set to_one (a URI, or \"\" for nil) or to_many")

    /// This error about the value of `property`, with the property named in the message and context.
    func naming(property: String) -> ModelError {
        ModelError(code, "'\(property)': \(message)", context: context.merging(["property": property]) { a, _ in a })
    }
}
