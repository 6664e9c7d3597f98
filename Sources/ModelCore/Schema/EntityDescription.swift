/// One entity: a kind of object with attributes and relationships, optionally inheriting from a
/// superentity (fetching the superentity returns its subentities' objects too).
public struct EntityDescription: Hashable, Sendable, Codable {
    public var name: String
    /// The entity this one inherits attributes, relationships and constraints from.
    public var superentity: String?
    /// An abstract entity has no objects of its own, only of its subentities.
    public var isAbstract: Bool
    public var attributes: [AttributeDescription]
    public var relationships: [RelationshipDescription]
    /// Compound unique constraints: each is a list of attribute names whose values together must
    /// be unique across the entity and its subentities (SwiftData's `#Unique`).
    public var uniqueConstraints: [[String]]
    /// Compound indexes: each is a list of attribute or to-one relationship names (`#Index`).
    public var indexes: [[String]]
    /// The entity's previous name, for renames (`@Model` classes renamed with
    /// `@Attribute(originalName:)`'s entity counterpart, Core Data's renaming identifier).
    public var originalName: String?

    public init(
        name: String,
        superentity: String? = nil,
        isAbstract: Bool = false,
        attributes: [AttributeDescription] = [],
        relationships: [RelationshipDescription] = [],
        uniqueConstraints: [[String]] = [],
        indexes: [[String]] = [],
        originalName: String? = nil
    ) {
        self.name = name
        self.superentity = superentity
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.uniqueConstraints = uniqueConstraints
        self.indexes = indexes
        self.originalName = originalName
    }

    private enum CodingKeys: String, CodingKey {
        case name, superentity, isAbstract, attributes, relationships, uniqueConstraints, indexes, originalName
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        superentity = try c.decodeIfPresent(String.self, forKey: .superentity)
        isAbstract = try c.decodeIfPresent(Bool.self, forKey: .isAbstract) ?? false
        attributes = try c.decodeIfPresent([AttributeDescription].self, forKey: .attributes) ?? []
        relationships = try c.decodeIfPresent([RelationshipDescription].self, forKey: .relationships) ?? []
        uniqueConstraints = try c.decodeIfPresent([[String]].self, forKey: .uniqueConstraints) ?? []
        indexes = try c.decodeIfPresent([[String]].self, forKey: .indexes) ?? []
        originalName = try c.decodeIfPresent(String.self, forKey: .originalName)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(superentity, forKey: .superentity)
        if isAbstract { try c.encode(true, forKey: .isAbstract) }
        if !attributes.isEmpty { try c.encode(attributes, forKey: .attributes) }
        if !relationships.isEmpty { try c.encode(relationships, forKey: .relationships) }
        if !uniqueConstraints.isEmpty { try c.encode(uniqueConstraints, forKey: .uniqueConstraints) }
        if !indexes.isEmpty { try c.encode(indexes, forKey: .indexes) }
        try c.encodeIfPresent(originalName, forKey: .originalName)
    }
}
