/// What happens to related objects when an object is deleted.
public enum DeleteRule: String, Hashable, Sendable, Codable, CaseIterable {
    /// Remove the deleted object from the related objects' inverse relationship.
    case nullify
    /// Delete the related objects too.
    case cascade
    /// Refuse the delete while any related object exists.
    case deny
    /// Leave the related objects as they are (their references dangle).
    case noAction
}

/// One relationship of an entity: a reference to one object, or to many, of another entity.
public struct RelationshipDescription: Hashable, Sendable, Codable {
    public var name: String
    /// The entity at the other end.
    public var destination: String
    public var isToMany: Bool
    /// The relationship on the destination that points back; declaring it on one side is enough.
    public var inverse: String?
    public var deleteRule: DeleteRule
    /// For a to-one relationship: whether it may be nil.
    public var isOptional: Bool
    /// For a to-many relationship: the fewest related objects allowed.
    public var minCount: Int?
    /// For a to-many relationship: the most related objects allowed.
    public var maxCount: Int?

    public init(
        name: String,
        destination: String,
        isToMany: Bool = false,
        inverse: String? = nil,
        deleteRule: DeleteRule = .nullify,
        isOptional: Bool = true,
        minCount: Int? = nil,
        maxCount: Int? = nil
    ) {
        self.name = name
        self.destination = destination
        self.isToMany = isToMany
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.minCount = minCount
        self.maxCount = maxCount
    }

    private enum CodingKeys: String, CodingKey {
        case name, destination, isToMany = "toMany", inverse, deleteRule, isOptional = "optional", minCount, maxCount
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        destination = try c.decode(String.self, forKey: .destination)
        isToMany = try c.decodeIfPresent(Bool.self, forKey: .isToMany) ?? false
        inverse = try c.decodeIfPresent(String.self, forKey: .inverse)
        deleteRule = try c.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify
        isOptional = try c.decodeIfPresent(Bool.self, forKey: .isOptional) ?? true
        minCount = try c.decodeIfPresent(Int.self, forKey: .minCount)
        maxCount = try c.decodeIfPresent(Int.self, forKey: .maxCount)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(destination, forKey: .destination)
        if isToMany { try c.encode(true, forKey: .isToMany) }
        try c.encodeIfPresent(inverse, forKey: .inverse)
        if deleteRule != .nullify { try c.encode(deleteRule, forKey: .deleteRule) }
        if !isOptional { try c.encode(false, forKey: .isOptional) }
        try c.encodeIfPresent(minCount, forKey: .minCount)
        try c.encodeIfPresent(maxCount, forKey: .maxCount)
    }
}
