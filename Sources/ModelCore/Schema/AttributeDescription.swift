/// One attribute of an entity: a named, typed value.
public struct AttributeDescription: Hashable, Sendable, Codable {
    public var name: String
    public var type: AttributeType
    /// Whether the attribute may be nil. A non-optional attribute without a default must be
    /// given a value when an object is inserted.
    public var isOptional: Bool
    /// The value a new object gets when none is given.
    public var defaultValue: Value?
    /// Keep the value in the history tombstone when the object is deleted.
    public var preserveValueOnDeletion: Bool
    /// The attribute's previous name, for renames (`@Attribute(originalName:)`).
    public var originalName: String?

    public init(
        name: String,
        type: AttributeType,
        isOptional: Bool = false,
        defaultValue: Value? = nil,
        preserveValueOnDeletion: Bool = false,
        originalName: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue.map(Self.kept)
        self.preserveValueOnDeletion = preserveValueOnDeletion
        self.originalName = originalName
    }

    /// A default as a backend keeps it: -0.0 as 0.0, as every value given is (values.proto),
    /// so that no backend fills an object with a zero's sign another would drop.
    private static func kept(_ value: Value) -> Value {
        if case .double(let d) = value, d == 0, d.sign == .minus { return .double(0) }
        return value
    }

    private enum CodingKeys: String, CodingKey {
        case name, type, isOptional = "optional", defaultValue = "default", preserveValueOnDeletion, originalName
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        type = try c.decode(AttributeType.self, forKey: .type)
        isOptional = try c.decodeIfPresent(Bool.self, forKey: .isOptional) ?? false
        preserveValueOnDeletion = try c.decodeIfPresent(Bool.self, forKey: .preserveValueOnDeletion) ?? false
        originalName = try c.decodeIfPresent(String.self, forKey: .originalName)
        if c.contains(.defaultValue) {
            let nested = try c.superDecoder(forKey: .defaultValue)
            let value = try Value(untagged: try nested.singleValueContainer(), as: type)
            defaultValue = value.isNull ? nil : Self.kept(value)
        } else {
            defaultValue = nil
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(type, forKey: .type)
        if isOptional { try c.encode(true, forKey: .isOptional) }
        if let defaultValue {
            var single: any SingleValueEncodingContainer = c.superEncoder(forKey: .defaultValue).singleValueContainer()
            try defaultValue.encodeUntagged(to: &single)
        }
        if preserveValueOnDeletion { try c.encode(true, forKey: .preserveValueOnDeletion) }
        try c.encodeIfPresent(originalName, forKey: .originalName)
    }
}
