/// What to fetch: Core Data's fetch request, SwiftData's `FetchDescriptor`.
public struct FetchDescriptor: Hashable, Sendable {
    /// What a fetch returns.
    public enum ResultType: String, Hashable, Sendable, Codable {
        /// Snapshots of the objects.
        case objects
        /// The objects' identifiers only.
        case identifiers
        /// How many objects match.
        case count
    }

    public var entityName: String
    public var predicate: Predicate?
    public var sortBy: [SortDescriptor]
    public var offset: Int
    /// At most this many results; nil for all.
    public var limit: Int?
    /// Whether objects of subentities are included (true by default, as in Core Data).
    public var includesSubentities: Bool
    /// The attributes and relationships to return; nil for all of them.
    public var propertiesToFetch: [String]?
    /// Relationship key paths whose objects come back with the results (`trip`, `trip.bucketList`).
    public var relationshipKeyPathsForPrefetching: [PropertyPath]
    public var resultType: ResultType

    public init(
        entityName: String,
        predicate: Predicate? = nil,
        sortBy: [SortDescriptor] = [],
        offset: Int = 0,
        limit: Int? = nil,
        includesSubentities: Bool = true,
        propertiesToFetch: [String]? = nil,
        relationshipKeyPathsForPrefetching: [PropertyPath] = [],
        resultType: ResultType = .objects
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortBy = sortBy
        self.offset = offset
        self.limit = limit
        self.includesSubentities = includesSubentities
        self.propertiesToFetch = propertiesToFetch
        self.relationshipKeyPathsForPrefetching = relationshipKeyPathsForPrefetching
        self.resultType = resultType
    }

    /// A validated copy: the entity exists, the predicate is typed against it, sort keys and
    /// properties exist, offset and limit are not negative. Backends run this before anything else.
    public func validated(in schema: ResolvedSchema, storeIdentifier: UUID? = nil) throws(ModelError) -> FetchDescriptor
    {
        let entity = try schema.entity(entityName)
        var copy = self
        copy.predicate = try predicate?.typed(for: entity, in: schema, storeIdentifier: storeIdentifier)
        for sort in sortBy { try sort.validate(for: entity, in: schema) }
        guard offset >= 0 else { throw ModelError(.invalidArgument, "offset \(offset) is negative") }
        if let limit, limit < 0 { throw ModelError(.invalidArgument, "limit \(limit) is negative") }
        for name in propertiesToFetch ?? [] where entity.attribute(name) == nil && entity.relationship(name) == nil {
            throw ModelError.unknownProperty(name, entity: entity.name)
        }
        for path in relationshipKeyPathsForPrefetching {
            let resolved = try schema.resolve(path, from: entity)
            guard resolved.endsAtObject, !resolved.relationships.isEmpty else {
                throw ModelError(
                    .invalidArgument, "'\(path)' is not a relationship key path to prefetch",
                    context: ["keyPath": path.description])
            }
        }
        return copy
    }
}

import Foundation
