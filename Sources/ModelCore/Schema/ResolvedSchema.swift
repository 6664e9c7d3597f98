import Synchronization

/// A validated schema, resolved for use: inherited properties copied into subentities, inverses
/// linked both ways, and each relationship's storage decided. Immutable and shared.
public final class ResolvedSchema: Sendable, Hashable, CustomStringConvertible {
    /// The schema as declared.
    public let schema: Schema
    /// A deterministic hash of everything that shapes stored data (names, types, optionality,
    /// defaults, relationships, constraints, inheritance); declaration order and `originalName`
    /// don't count.
    public let versionHash: String
    /// Entity names in declaration order.
    public let entityNames: [String]
    /// Every join table the schema's to-many relationships need.
    public let joinTables: [JoinTable]
    private let entitiesByName: [String: ResolvedEntity]
    private let json = Mutex<String?>(nil)

    /// Validates `schema` and resolves it; throws `invalidSchema` naming the culprit.
    public init(_ schema: Schema) throws(ModelError) {
        try SchemaValidator(schema).validate()
        let resolution = SchemaResolver(schema)
        self.schema = schema
        self.versionHash = schema.computeVersionHash()
        self.entityNames = schema.entities.map(\.name)
        self.entitiesByName = resolution.entities
        self.joinTables = resolution.joinTables
    }

    /// ``init(_:)``, or the schema resolved earlier when it is equal: the daemon resolves the
    /// same few schemas again and again (a test harness creates a store per test, all with one
    /// schema), and validating, resolving and hashing one again was about 8% of the daemon's
    /// work in creating a store. The last ``cacheLimit`` schemas are kept.
    public static func resolved(_ schema: Schema) throws(ModelError) -> ResolvedSchema {
        if let known = cache.withLock({ $0[schema] }) { return known }
        let resolved = try ResolvedSchema(schema)
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.removeAll() }
            cache[schema] = resolved
        }
        return resolved
    }

    static let cacheLimit = 32
    private static let cache = Mutex<[Schema: ResolvedSchema]>([:])

    /// The declared schema's canonical JSON (``Schema/canonicalJSON()``), made once.
    public var canonicalJSON: String {
        json.withLock { json in
            if let json { return json }
            let made = schema.canonicalJSON()
            json = made
            return made
        }
    }

    /// The entity called `name`, or `unknownEntity` — naming the entity's new name when a
    /// migration renamed it (its declaration keeps the old one as `originalName`).
    public func entity(_ name: String) throws(ModelError) -> ResolvedEntity {
        guard let entity = entitiesByName[name] else {
            if let renamed = schema.entities.first(where: { $0.originalName == name }) {
                throw ModelError(
                    .unknownEntity,
                    "entity '\(name)' was renamed to '\(renamed.name)' by a migration; use the new name (its objects keep their keys)",
                    context: ["entity": name, "renamedTo": renamed.name])
            }
            throw ModelError.unknownEntity(name)
        }
        return entity
    }

    /// The entity called `name`, if any.
    public subscript(name: String) -> ResolvedEntity? { entitiesByName[name] }

    /// All entities, in declaration order.
    public var entities: [ResolvedEntity] { entityNames.compactMap { entitiesByName[$0] } }

    /// The root entities: one per inheritance hierarchy (one table each in SQLite).
    public var rootEntities: [ResolvedEntity] { entities.filter { $0.superentity == nil } }

    public var description: String {
        "ResolvedSchema(\(entityNames.joined(separator: ", ")); \(versionHash.prefix(12)))"
    }

    public static func == (lhs: ResolvedSchema, rhs: ResolvedSchema) -> Bool {
        lhs.versionHash == rhs.versionHash && lhs.schema == rhs.schema
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(versionHash) }
}

/// An entity with everything it inherits.
public final class ResolvedEntity: Sendable, CustomStringConvertible {
    public let name: String
    public let superentity: String?
    /// The root of this entity's inheritance hierarchy: the entities of one hierarchy share one
    /// table, named after the root.
    public let root: String
    public let isAbstract: Bool
    /// Attributes, the superentity's first.
    public let attributes: [AttributeDescription]
    /// Relationships, the superentity's first.
    public let relationships: [ResolvedRelationship]
    /// Unique constraints, including the superentity's.
    public let uniqueConstraints: [[String]]
    /// Indexes declared on this entity (not the inherited ones, which the superentity declares).
    public let indexes: [[String]]
    /// This entity and every entity below it, pre-order.
    public let descendants: [String]
    /// This entity, then its superentity, up to the root.
    public let ancestors: [String]
    private let attributeIndex: [String: Int]
    private let relationshipIndex: [String: Int]

    init(
        name: String, superentity: String?, root: String, isAbstract: Bool,
        attributes: [AttributeDescription], relationships: [ResolvedRelationship],
        uniqueConstraints: [[String]], indexes: [[String]], descendants: [String], ancestors: [String]
    ) {
        self.name = name
        self.superentity = superentity
        self.root = root
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.uniqueConstraints = uniqueConstraints
        self.indexes = indexes
        self.descendants = descendants
        self.ancestors = ancestors
        self.attributeIndex = Dictionary(uniqueKeysWithValues: attributes.enumerated().map { ($1.name, $0) })
        self.relationshipIndex = Dictionary(uniqueKeysWithValues: relationships.enumerated().map { ($1.name, $0) })
    }

    /// The attribute called `name`, if any.
    public func attribute(_ name: String) -> AttributeDescription? {
        attributeIndex[name].map { attributes[$0] }
    }

    /// The relationship called `name`, if any.
    public func relationship(_ name: String) -> ResolvedRelationship? {
        relationshipIndex[name].map { relationships[$0] }
    }

    /// Whether this entity is `other` or inherits from it.
    public func isKind(of other: String) -> Bool { ancestors.contains(other) }

    /// The attributes whose values the history keeps when an object is deleted.
    public var preservedAttributes: [AttributeDescription] { attributes.filter(\.preserveValueOnDeletion) }

    public var description: String { "entity \(name)" }
}

/// A relationship with its inverse linked and its storage decided.
public struct ResolvedRelationship: Hashable, Sendable {
    public let name: String
    public let destination: String
    public let isToMany: Bool
    /// The inverse, whichever side declared it.
    public let inverse: String?
    public let deleteRule: DeleteRule
    public let isOptional: Bool
    public let minCount: Int?
    public let maxCount: Int?
    /// The entity that declares the relationship (a superentity, for inherited ones).
    public let declaringEntity: String
    public let storage: RelationshipStorage

    /// Whether a write to this side is what gets stored; the other side of a stored pair is
    /// derived from it.
    public var isStoredHere: Bool {
        switch storage {
        case .foreignKey: true
        case .inverseForeignKey: false
        case .joinTable(_, let isOwner): isOwner
        }
    }
}

/// Where a relationship's references are kept.
public enum RelationshipStorage: Hashable, Sendable {
    /// A column named after the relationship, in the declaring entity's table.
    case foreignKey
    /// Derived from the foreign key `relationship` of `entity` (the to-one side that points here).
    case inverseForeignKey(entity: String, relationship: String)
    /// Rows of a join table. On the owning side this object's key is in `source`.
    case joinTable(JoinTable, isOwner: Bool)
}

/// A table of (source, target) key pairs for a to-many relationship that has no to-one inverse.
public struct JoinTable: Hashable, Sendable {
    /// `_join_<Entity>_<relationship>`, after the owning side.
    public let name: String
    public let ownerEntity: String
    public let ownerRelationship: String
    /// The hierarchy (root entity) the source keys belong to.
    public let sourceRoot: String
    /// The hierarchy (root entity) the target keys belong to.
    public let targetRoot: String
}
