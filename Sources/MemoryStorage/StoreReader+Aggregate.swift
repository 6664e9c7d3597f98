import ModelCore
import ModelStorage

extension StoreReader {
    /// Runs a validated aggregate. Without group keys: one row, even when nothing matches
    /// (`count` 0, the other functions nil). With group keys: one row per distinct combination
    /// of key values (nil is a value of its own). Rows are sorted by `sortBy`, then by the group
    /// keys ascending, then paged.
    func aggregate(_ descriptor: AggregateDescriptor) throws(ModelError) -> [AggregateRow] {
        let entity = try schema.entity(descriptor.entityName)
        let refs = try matching(entity, descriptor.predicate, includesSubentities: descriptor.includesSubentities)
        var groupPaths: [ResolvedPath] = []
        for path in descriptor.groupBy { groupPaths.append(try schema.resolve(path, from: entity)) }
        var columns: [(aggregation: Aggregation, path: ResolvedPath?)] = []
        for aggregation in descriptor.aggregations {
            columns.append(
                (
                    aggregation,
                    try aggregation.keyPath.map { (path) throws(ModelError) in try schema.resolve(path, from: entity) }
                ))
        }

        // Group keys for every object, then groups of equal keys, in key order (nil first).
        let keyed = refs.map { ref in (ref: ref, keys: groupPaths.map { value(of: $0, from: ref) }) }
        let ordered = keyed.enumerated().sorted { a, b in
            Self.compareKeys(a.element.keys, b.element.keys) ?? (a.offset < b.offset)
        }.map(\.element)
        var groups: [(keys: [Value], refs: [ObjectRef])] = []
        for item in ordered {
            if let last = groups.last, Self.compareKeys(last.keys, item.keys) == nil {
                groups[groups.count - 1].refs.append(item.ref)
            } else {
                groups.append((item.keys, [item.ref]))
            }
        }
        if descriptor.groupBy.isEmpty, groups.isEmpty { groups = [([], [])] }

        var rows: [AggregateRow] = groups.map { group in
            var row = AggregateRow()
            for (path, key) in zip(descriptor.groupBy, group.keys) { row[path.description] = key }
            for column in columns {
                row[column.aggregation.name] = compute(column.aggregation.function, column.path, over: group.refs)
            }
            return row
        }
        if !descriptor.sortBy.isEmpty {
            rows = rows.enumerated().sorted { a, b in
                for sort in descriptor.sortBy {
                    let result =
                        Value.compare(a.element[sort.key] ?? .null, b.element[sort.key] ?? .null) ?? .orderedSame
                    if result != .orderedSame { return sort.ascending == (result == .orderedAscending) }
                }
                return a.offset < b.offset
            }.map(\.element)
        }
        return Self.page(rows, offset: descriptor.offset, limit: descriptor.limit)
    }

    /// One aggregate function over a group: `count` of objects counts them; every other function
    /// ignores nils (`sum`, `avg`, `min`, `max` of no values are nil).
    private func compute(_ function: Aggregation.Function, _ path: ResolvedPath?, over refs: [ObjectRef]) -> Value {
        guard let path, let attribute = path.attribute else {
            return function == .count ? .int(Int64(refs.count)) : .null
        }
        let values = refs.map { value(of: path, from: $0) }.filter { !$0.isNull }
        switch function {
        case .count:
            return .int(Int64(values.count))
        case .sum, .avg:
            var accumulator = NumericAccumulator()
            for value in values { accumulator.add(value) }
            return function == .sum ? accumulator.sum(as: attribute.type) : accumulator.average(as: attribute.type)
        case .min:
            return PredicateEvaluator.extreme(values, keeping: .orderedAscending)
        case .max:
            return PredicateEvaluator.extreme(values, keeping: .orderedDescending)
        }
    }

    /// Whether `a` sorts before `b` key by key (nil first), or nil when they are equal.
    private static func compareKeys(_ a: [Value], _ b: [Value]) -> Bool? {
        for (x, y) in zip(a, b) {
            let result = Value.compare(x, y) ?? .orderedSame
            if result != .orderedSame { return result == .orderedAscending }
        }
        return nil
    }
}
