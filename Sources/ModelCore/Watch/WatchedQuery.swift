import Foundation

/// What a watch keeps true: a fetch of objects, a count, or grouped aggregates.
public enum WatchedQuery: Hashable, Sendable {
    case fetch(FetchDescriptor)
    case count(FetchDescriptor)
    case aggregate(AggregateDescriptor)

    /// The most objects a watched fetch may hold: a watch keeps its last result to tell the next
    /// one from it, so its memory is bounded by this (and by each object's size).
    public static let maximumObjects = 10_000

    /// The query checked against `schema`: a fetch of objects (no prefetching), a count, or
    /// aggregates, each valid.
    public func validated(in schema: ResolvedSchema, storeIdentifier: UUID) throws(ModelError) -> WatchedQuery {
        switch self {
        case .fetch(var descriptor):
            guard descriptor.relationshipKeyPathsForPrefetching.isEmpty else {
                throw ModelError(
                    .invalidArgument,
                    "a watched fetch does not prefetch relationships: watch the related entity too, or fetch its objects by URI"
                )
            }
            descriptor.resultType = .objects
            return .fetch(try descriptor.validated(in: schema, storeIdentifier: storeIdentifier))
        case .count(var descriptor):
            descriptor.resultType = .count
            return .count(try descriptor.validated(in: schema, storeIdentifier: storeIdentifier))
        case .aggregate(let descriptor):
            return .aggregate(try descriptor.validated(in: schema, storeIdentifier: storeIdentifier))
        }
    }

    /// The entity the query is about.
    public var entityName: String {
        switch self {
        case .fetch(let descriptor), .count(let descriptor): descriptor.entityName
        case .aggregate(let descriptor): descriptor.entityName
        }
    }

    /// The entities a save must touch for the result to change: the queried entity's whole
    /// hierarchy, and the hierarchies of every entity its relationships reach within as many hops
    /// as the query's longest key path (at least one: fetched objects carry their relationships).
    /// A save that touches none of them is not looked at again.
    public func entities(in schema: ResolvedSchema) -> Set<String> {
        var reached = Set<String>()
        var frontier = [entityName]
        for hop in 0...max(hops, 1) {
            var next: [String] = []
            for name in frontier {
                guard let entity = schema[name] else { continue }
                for member in Self.hierarchy(of: entity, in: schema) where reached.insert(member).inserted {
                    if hop < max(hops, 1) {
                        next += schema[member]?.relationships.map(\.destination) ?? []
                    }
                }
            }
            frontier = next
        }
        return reached
    }

    /// Every entity of `entity`'s inheritance hierarchy.
    private static func hierarchy(of entity: ResolvedEntity, in schema: ResolvedSchema) -> [String] {
        guard let root = schema[entity.root] else { return [entity.name] }
        return root.descendants
    }

    /// How many relationships the query's longest key path crosses, at most.
    var hops: Int {
        switch self {
        case .fetch(let descriptor), .count(let descriptor):
            max(
                descriptor.predicate.map(Self.hops) ?? 0,
                descriptor.sortBy.map { $0.keyPath.components.count }.max() ?? 0)
        case .aggregate(let descriptor):
            max(
                descriptor.predicate.map(Self.hops) ?? 0,
                descriptor.groupBy.map(\.components.count).max() ?? 0,
                descriptor.aggregations.compactMap { $0.keyPath?.components.count }.max() ?? 0)
        }
    }

    private static func hops(_ predicate: Predicate) -> Int {
        switch predicate {
        case .constant: 0
        case .comparison(let comparison): max(hops(comparison.lhs), hops(comparison.rhs))
        case .and(let parts), .or(let parts): parts.map(hops).max() ?? 0
        case .not(let inner): hops(inner)
        }
    }

    private static func hops(_ expression: Expression) -> Int {
        switch expression {
        case .keyPath(let path): path.components.count
        case .literal, .object, .entityName: 0
        case .list(let items): items.map(hops).max() ?? 0
        case .collection(_, let path, let attribute): path.components.count + (attribute == nil ? 0 : 1)
        case .subqueryCount(let collection, _, let predicate): collection.components.count + hops(predicate)
        case .arithmetic(_, let lhs, let rhs): max(hops(lhs), hops(rhs))
        }
    }
}
