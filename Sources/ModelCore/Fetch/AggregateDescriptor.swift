import Foundation

/// A grouped aggregate, pushed down to the store: Core Data's dictionary results
/// (`propertiesToGroupBy` with `NSExpressionDescription`s).
///
/// Each result row maps every group-by key path (as text, `year`, `trip.name`) and every
/// aggregation name to a value. Without group-by keys there is exactly one row, even when no
/// object matches (`count` 0, other functions nil).
public struct AggregateDescriptor: Hashable, Sendable {
    public var entityName: String
    public var predicate: Predicate?
    /// Attribute key paths (through to-one relationships) to group by.
    public var groupBy: [PropertyPath]
    public var aggregations: [Aggregation]
    /// Sorts by group-by key path text or aggregation name. Rows are always finally ordered by
    /// their group keys, ascending, so the order is the same in every backend.
    public var sortBy: [AggregateSort]
    public var offset: Int
    public var limit: Int?
    public var includesSubentities: Bool

    public init(
        entityName: String, predicate: Predicate? = nil, groupBy: [PropertyPath] = [],
        aggregations: [Aggregation], sortBy: [AggregateSort] = [], offset: Int = 0, limit: Int? = nil,
        includesSubentities: Bool = true
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.groupBy = groupBy
        self.aggregations = aggregations
        self.sortBy = sortBy
        self.offset = offset
        self.limit = limit
        self.includesSubentities = includesSubentities
    }

    /// A validated copy, with the predicate typed. Backends run this before anything else.
    public func validated(in schema: ResolvedSchema, storeIdentifier: UUID? = nil) throws(ModelError)
        -> AggregateDescriptor
    {
        let entity = try schema.entity(entityName)
        var copy = self
        copy.predicate = try predicate?.typed(for: entity, in: schema, storeIdentifier: storeIdentifier)
        guard !aggregations.isEmpty || !groupBy.isEmpty else {
            throw ModelError(.invalidArgument, "an aggregate needs at least one group-by key or one aggregation")
        }
        var names = Set<String>()
        for path in groupBy {
            let resolved = try schema.resolve(path, from: entity)
            guard resolved.attribute != nil, resolved.toManyIndex == nil else {
                throw ModelError(
                    .invalidArgument,
                    "cannot group by '\(path)': group by attributes, through to-one relationships only",
                    context: ["keyPath": path.description])
            }
            names.insert(path.description)
        }
        for aggregation in aggregations {
            guard SchemaNames.isWellFormed(aggregation.name) else {
                throw ModelError(
                    .invalidArgument,
                    "'\(aggregation.name)' is not a valid result name: use letters, digits and underscores")
            }
            guard names.insert(aggregation.name).inserted else {
                throw ModelError(.invalidArgument, "the result name '\(aggregation.name)' is used twice")
            }
            _ = try aggregation.resultType(for: entity, in: schema)
        }
        for sort in sortBy where !names.contains(sort.key) {
            throw ModelError(
                .invalidArgument,
                "cannot sort by '\(sort.key)': sort by a group-by key path or an aggregation name (\(names.sorted().joined(separator: ", ")))"
            )
        }
        guard offset >= 0 else { throw ModelError(.invalidArgument, "offset \(offset) is negative") }
        if let limit, limit < 0 { throw ModelError(.invalidArgument, "limit \(limit) is negative") }
        return copy
    }
}

/// One aggregate column of a result: a function of an attribute key path, under a name.
public struct Aggregation: Hashable, Sendable, Codable {
    public enum Function: String, Hashable, Sendable, Codable, CaseIterable {
        case count, sum, avg, min, max
    }

    /// The key of this value in result rows.
    public var name: String
    public var function: Function
    /// The attribute to aggregate; nil for `count` of objects.
    public var keyPath: PropertyPath?

    public init(_ name: String, _ function: Function, _ keyPath: PropertyPath? = nil) {
        self.name = name
        self.function = function
        self.keyPath = keyPath
    }

    /// The type of the result: int for counts, the attribute's type for sums (double for an
    /// average of ints), the attribute's type for min and max.
    public func resultType(for entity: ResolvedEntity, in schema: ResolvedSchema) throws(ModelError) -> AttributeType {
        guard let keyPath else {
            guard function == .count else {
                throw ModelError(.invalidArgument, "\(function.rawValue) needs an attribute key path")
            }
            return .int
        }
        let resolved = try schema.resolve(keyPath, from: entity)
        guard let attribute = resolved.attribute, resolved.toManyIndex == nil else {
            throw ModelError(
                .invalidArgument,
                "cannot aggregate '\(keyPath)': aggregate attributes, through to-one relationships only",
                context: ["keyPath": keyPath.description])
        }
        switch function {
        case .count: return .int
        case .sum where attribute.type.isNumeric: return attribute.type
        case .avg where attribute.type.isNumeric: return attribute.type == .decimal ? .decimal : .double
        case .min where attribute.type.isNumeric || attribute.type == .date || attribute.type == .string,
            .max where attribute.type.isNumeric || attribute.type == .date || attribute.type == .string:
            return attribute.type
        default:
            throw ModelError(
                .typeMismatch, "\(function.rawValue) cannot apply to \(attribute.type.rawValue) attribute '\(keyPath)'")
        }
    }
}

/// A sort key of an aggregate result: a group-by key path's text or an aggregation's name.
public struct AggregateSort: Hashable, Sendable, Codable {
    public var key: String
    public var ascending: Bool

    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }
}

/// One row of an aggregate result: group keys and aggregation names to values.
public typealias AggregateRow = [String: Value]
