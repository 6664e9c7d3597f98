import ModelCore

extension FetchDescriptor {
    /// Reads a fetch request. Names are checked for form here; against the schema when the
    /// store validates the descriptor.
    public init(wire: Modeld_V1_FetchRequest) throws(ModelError) {
        var sort: [SortDescriptor] = []
        for key in wire.sort {
            sort.append(
                SortDescriptor(
                    try PropertyPath(dotted: key.keyPath), ascending: !key.descending,
                    caseInsensitive: key.caseInsensitive))
        }
        var prefetch: [PropertyPath] = []
        for path in wire.prefetch { prefetch.append(try PropertyPath(dotted: path)) }
        let resultType: ResultType
        switch wire.resultType {
        case .objects: resultType = .objects
        case .identifiers: resultType = .identifiers
        case .count: resultType = .count
        case .UNRECOGNIZED(let number): throw ModelError(.invalidArgument, "unknown result type \(number)")
        }
        self.init(
            entityName: wire.entity, predicate: try wire.predicate.model(), sortBy: sort,
            offset: try WireNumbers.int(wire.offset, "offset"),
            limit: wire.hasLimit ? try WireNumbers.int(wire.limit, "limit") : nil,
            includesSubentities: !wire.excludeSubentities,
            propertiesToFetch: wire.hasProperties ? wire.properties.names : nil,
            relationshipKeyPathsForPrefetching: prefetch, resultType: resultType)
    }

    /// The wire form of this descriptor, with the predicate as a tree.
    public var wire: Modeld_V1_FetchRequest {
        var wire = Modeld_V1_FetchRequest()
        wire.entity = entityName
        if let predicate { wire.predicate = Modeld_V1_Predicate(predicate) }
        wire.sort = sortBy.map { key in
            Modeld_V1_SortKey.with {
                $0.keyPath = key.keyPath.description
                $0.descending = !key.ascending
                $0.caseInsensitive = key.caseInsensitive
            }
        }
        wire.offset = Int64(offset)
        if let limit { wire.limit = Int64(limit) }
        wire.excludeSubentities = !includesSubentities
        if let propertiesToFetch { wire.properties = Modeld_V1_NameSelection.with { $0.names = propertiesToFetch } }
        wire.prefetch = relationshipKeyPathsForPrefetching.map(\.description)
        wire.resultType =
            switch resultType {
            case .objects: .objects
            case .identifiers: .identifiers
            case .count: .count
            }
        return wire
    }
}

extension AggregateDescriptor {
    /// Reads an aggregate request.
    public init(wire: Modeld_V1_AggregateRequest) throws(ModelError) {
        var groupBy: [PropertyPath] = []
        for path in wire.groupBy { groupBy.append(try PropertyPath(dotted: path)) }
        var aggregations: [Aggregation] = []
        for column in wire.aggregations {
            guard let function = WireTables.aggregate.first(where: { $0.1 == column.function })?.0 else {
                throw ModelError(
                    .invalidArgument,
                    "aggregation '\(column.name)' has no function (or an unknown one); use count, sum, avg, min or max")
            }
            let path = column.keyPath.isEmpty ? nil : try PropertyPath(dotted: column.keyPath)
            aggregations.append(Aggregation(column.name, function, path))
        }
        self.init(
            entityName: wire.entity, predicate: try wire.predicate.model(), groupBy: groupBy,
            aggregations: aggregations,
            sortBy: wire.sort.map { AggregateSort($0.key, ascending: !$0.descending) },
            offset: try WireNumbers.int(wire.offset, "offset"),
            limit: wire.hasLimit ? try WireNumbers.int(wire.limit, "limit") : nil,
            includesSubentities: !wire.excludeSubentities)
    }

    /// The wire form of this descriptor, with the predicate as a tree.
    public var wire: Modeld_V1_AggregateRequest {
        var wire = Modeld_V1_AggregateRequest()
        wire.entity = entityName
        if let predicate { wire.predicate = Modeld_V1_Predicate(predicate) }
        wire.groupBy = groupBy.map(\.description)
        wire.aggregations = aggregations.map { column in
            Modeld_V1_Aggregation.with {
                $0.name = column.name
                $0.function = WireTables.aggregate.first { $0.0 == column.function }?.1 ?? .unspecified
                $0.keyPath = column.keyPath?.description ?? ""
            }
        }
        wire.sort = sortBy.map { key in
            Modeld_V1_AggregateSort.with {
                $0.key = key.key; $0.descending = !key.ascending
            }
        }
        wire.offset = Int64(offset)
        if let limit { wire.limit = Int64(limit) }
        wire.excludeSubentities = !includesSubentities
        return wire
    }
}

extension WireTables {
    static let aggregate: [(Aggregation.Function, Modeld_V1_AggregateFunction)] = [
        (.count, .count), (.sum, .sum), (.avg, .avg), (.min, .min), (.max, .max),
    ]
}

/// Numbers from the wire that must fit an `Int`.
enum WireNumbers {
    static func int(_ value: Int64, _ name: String) throws(ModelError) -> Int {
        guard let number = Int(exactly: value) else {
            throw ModelError(.invalidArgument, "\(name) \(value) is out of range")
        }
        return number
    }
}
