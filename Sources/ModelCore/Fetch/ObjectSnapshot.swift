/// The value of a relationship of one object.
public enum RelationshipValue: Hashable, Sendable {
    case toOne(PersistentIdentifier?)
    case toMany([PersistentIdentifier])
}

/// An object as stored: its identity, version and values. Fetches return snapshots; contexts
/// keep the version to detect conflicting saves.
public struct ObjectSnapshot: Hashable, Sendable {
    public var id: PersistentIdentifier
    /// Starts at 1 when the object is inserted and grows by one with every save that changes it.
    public var version: Int64
    /// Attribute values by name (all attributes, or those asked for).
    public var attributes: [String: Value]
    /// Relationship values by name (all relationships, or those asked for).
    public var relationships: [String: RelationshipValue]

    public init(
        id: PersistentIdentifier, version: Int64, attributes: [String: Value] = [:],
        relationships: [String: RelationshipValue] = [:]
    ) {
        self.id = id
        self.version = version
        self.attributes = attributes
        self.relationships = relationships
    }

    /// The value of the attribute `name` (``Value/null`` if absent).
    public subscript(name: String) -> Value {
        attributes[name] ?? .null
    }

    /// The to-one target of `name`, if that relationship is to-one and set.
    public func toOne(_ name: String) -> PersistentIdentifier? {
        if case .toOne(let id)? = relationships[name] { return id }
        return nil
    }

    /// The to-many targets of `name`, empty if none.
    public func toMany(_ name: String) -> [PersistentIdentifier] {
        if case .toMany(let ids)? = relationships[name] { return ids }
        return []
    }
}

/// What a fetch returns, according to its result type.
public enum FetchResult: Hashable, Sendable {
    /// The objects, and the objects prefetched along the requested relationship key paths.
    case objects([ObjectSnapshot], prefetched: [ObjectSnapshot])
    case identifiers([PersistentIdentifier])
    case count(Int)

    /// The objects, for an `.objects` result; empty otherwise.
    public var objects: [ObjectSnapshot] {
        if case .objects(let objects, _) = self { return objects }
        return []
    }

    /// The identifiers of the results, for `.objects` and `.identifiers` results.
    public var identifiers: [PersistentIdentifier] {
        switch self {
        case .objects(let objects, _): objects.map(\.id)
        case .identifiers(let ids): ids
        case .count: []
        }
    }

    /// The number of results.
    public var count: Int {
        switch self {
        case .objects(let objects, _): objects.count
        case .identifiers(let ids): ids.count
        case .count(let n): n
        }
    }
}

extension ObjectSnapshot {
    /// About how many bytes the object takes on the wire, or in memory (an overestimate): for
    /// keeping batches and messages of objects under a budget.
    public var estimatedSize: Int {
        var size = 96 + Self.estimatedSize(of: attributes)
        for (name, value) in relationships {
            size += name.utf8.count + 16
            switch value {
            case .toOne: size += 100
            case .toMany(let ids): size += ids.count * 100
            }
        }
        return size
    }

    /// About how many bytes a table of values by name takes (an object's attributes, an
    /// aggregate's row): an overestimate, as ``estimatedSize``.
    public static func estimatedSize(of values: [String: Value]) -> Int {
        var size = 0
        for (name, value) in values {
            size += name.utf8.count + 16
            switch value {
            case .string(let text), .json(let text): size += text.utf8.count
            case .data(let bytes): size += bytes.count
            case .url(let url): size += url.absoluteString.utf8.count
            case .decimal: size += 40
            case .uuid: size += 36
            default: size += 10
            }
        }
        return size
    }
}
