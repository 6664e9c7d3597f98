import ModelCore

/// One computed column of an aggregate fetch: a count, or a sum, average, minimum or maximum of
/// an attribute, under a name.
// Immutable; holds a key path, which is not marked Sendable.
public struct Aggregate<T: PersistentModel>: @unchecked Sendable {
    let name: String?
    let function: Aggregation.Function
    let keyPath: PartialKeyPath<T>?

    /// How many objects (in each group).
    public static func count(as name: String = "count") -> Aggregate {
        Aggregate(name: name, function: .count, keyPath: nil)
    }
    /// The sum of an attribute (0 for none); named `sum_<property>` unless named.
    public static func sum<V>(_ keyPath: KeyPath<T, V>, as name: String? = nil) -> Aggregate {
        Aggregate(name: name, function: .sum, keyPath: keyPath)
    }
    /// The average of an attribute (nil for none).
    public static func average<V>(_ keyPath: KeyPath<T, V>, as name: String? = nil) -> Aggregate {
        Aggregate(name: name, function: .avg, keyPath: keyPath)
    }
    /// The least value of an attribute.
    public static func minimum<V>(_ keyPath: KeyPath<T, V>, as name: String? = nil) -> Aggregate {
        Aggregate(name: name, function: .min, keyPath: keyPath)
    }
    /// The greatest value of an attribute.
    public static func maximum<V>(_ keyPath: KeyPath<T, V>, as name: String? = nil) -> Aggregate {
        Aggregate(name: name, function: .max, keyPath: keyPath)
    }
}

/// Grouped counts and sums computed by the store, as Core Data's dictionary results: the store
/// groups and adds up, and sends back one row per group, not the objects.
public struct AggregateDescriptor<T: PersistentModel> {
    public var predicate: Foundation.Predicate<T>?
    public var storePredicate: StorePredicate?
    /// Attributes of `T` to group by; none for one row over every object selected.
    public var groupBy: [PartialKeyPath<T>]
    public var aggregates: [Aggregate<T>]
    /// Sorts rows by a group-by key path or an aggregate's name; rows are otherwise ordered by
    /// their group keys.
    public var sortBy: [(key: String, order: SortOrder)] = []
    /// At most this many results; nil or 0 for all of them (0 as Core Data's `fetchLimit`).
    @ZeroIsNoLimit public var fetchLimit: Int?
    /// Whether the context's unsaved changes count (true by default).
    public var includePendingChanges = true

    public init(
        predicate: Foundation.Predicate<T>? = nil, groupBy: [PartialKeyPath<T>] = [], aggregates: [Aggregate<T>]
    ) {
        self.predicate = predicate
        self.groupBy = groupBy
        self.aggregates = aggregates
    }

    func storeDescriptor(in types: ModelTypes) throws(ModelError) -> (
        ModelCore.AggregateDescriptor, [AnyKeyPath: String]
    ) {
        let info = try types.info(for: T.self)
        func attribute(_ keyPath: AnyKeyPath, _ use: String) throws(ModelError) -> PropertyInfo {
            guard let property = info.property(for: keyPath), !property.isRelationship else {
                throw ModelError(
                    .invalidArgument,
                    "can't \(use) \(keyPath.readableName): name a stored attribute of \(info.entityName)",
                    context: ["entity": info.entityName])
            }
            return property
        }
        var groupNames: [AnyKeyPath: String] = [:]
        var groups: [PropertyPath] = []
        for keyPath in groupBy {
            let property = try attribute(keyPath, "group by")
            groupNames[keyPath] = property.name
            groups.append(PropertyPath([property.name]))
        }
        var aggregations: [Aggregation] = []
        for aggregate in aggregates {
            if let keyPath = aggregate.keyPath {
                let property = try attribute(keyPath, "aggregate")
                aggregations.append(
                    Aggregation(
                        aggregate.name ?? "\(aggregate.function.rawValue)_\(property.name)", aggregate.function,
                        PropertyPath([property.name])))
            } else {
                aggregations.append(Aggregation(aggregate.name ?? "count", .count))
            }
        }
        var predicates: [ModelCore.Predicate] = []
        if let predicate { predicates.append(try PredicateTranslator.translate(predicate, root: info, types: types)) }
        if let storePredicate { predicates.append(storePredicate.predicate) }
        let descriptor = ModelCore.AggregateDescriptor(
            entityName: info.entityName, predicate: predicates.isEmpty ? nil : .all(predicates), groupBy: groups,
            aggregations: aggregations, sortBy: sortBy.map { AggregateSort($0.key, ascending: $0.order == .forward) },
            limit: fetchLimit
        )
        return (descriptor, groupNames)
    }
}

/// One row of an aggregate fetch: the group's key values and the aggregates.
public struct AggregateResult<T: PersistentModel>: @unchecked Sendable { // Immutable values and key-path names.
    let values: [String: Value]
    let groupNames: [AnyKeyPath: String]

    /// The group's value of a group-by attribute.
    public subscript<V>(_ keyPath: KeyPath<T, V>) -> V? {
        guard let name = groupNames[keyPath], let property = (try? ModelTypeInfo.of(T.self))?.propertyIfAny(name),
            let codec = property.codec, let stored = values[name], let decoded = try? codec.decode(stored)
        else { return nil }
        return decoded as? V
    }

    /// The count named `name` (0 if absent).
    public func count(_ name: String = "count") -> Int {
        if case .int(let count)? = values[name] { return Int(count) }
        return 0
    }

    /// An aggregate as a Double (nil when the store computed none, as an average of no objects).
    public func double(_ name: String) -> Double? { values[name]?.numericValue }

    /// An aggregate as an Int, for counts and sums of integers.
    public func int(_ name: String) -> Int? {
        if case .int(let value)? = values[name] { return Int(value) }
        return nil
    }

    /// An aggregate as a Decimal, for sums and averages of decimals.
    public func decimal(_ name: String) -> Decimal? {
        switch values[name] {
        case .decimal(let value)?: value
        case .int(let value)?: Decimal(value)
        default: nil
        }
    }

    /// The names of the row's values.
    public var names: [String] { values.keys.sorted() }
}

extension ModelContext {
    /// Grouped aggregates computed by the store: one row per group.
    public func aggregate<T: PersistentModel>(_ descriptor: AggregateDescriptor<T>) async throws -> [AggregateResult<T>]
    {
        try await core.perform {
            let (request, groupNames) = try descriptor.storeDescriptor(in: core.types)
            let rows: [AggregateRow]
            if descriptor.includePendingChanges {
                try await core.flush()
                rows = try await core.unitOfWork().aggregate(request)
            } else {
                rows = try await core.container.store.aggregateSaved(request)
            }
            return rows.map { AggregateResult(values: $0, groupNames: groupNames) }
        }
    }
}
