import ModelCore

/// What to fetch, as SwiftData's `FetchDescriptor`: a `#Predicate`, `SortDescriptor`s, offset
/// and limit. The predicate and the sort run in the store: a construct that can't be translated
/// is an error naming it, never a filter applied in memory.
public struct FetchDescriptor<T: PersistentModel> {
    public var predicate: Foundation.Predicate<T>?
    public var sortBy: [Foundation.SortDescriptor<T>]
    public var fetchLimit: Int?
    public var fetchOffset: Int?
    /// Whether the fetch sees the context's unsaved changes (true by default).
    public var includePendingChanges: Bool = true
    /// Whether objects of `T`'s subclasses are fetched too (true by default).
    public var includeSubentities: Bool = true
    /// The relationships whose objects come with the results. Empty (the default) means every
    /// relationship of `T`, so related objects can be read at once; name some to fetch fewer.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<T>] = []
    /// A predicate in NSPredicate's syntax, for what `#Predicate` can't say (`SUBQUERY(…)`,
    /// `@sum`, `ANY … BETWEEN`…), combined with ``predicate`` by AND.
    public var storePredicate: StorePredicate?

    public init(predicate: Foundation.Predicate<T>? = nil, sortBy: [Foundation.SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }

    /// The store's form of this descriptor.
    func storeDescriptor(in types: ModelTypes) throws(ModelError) -> ModelCore.FetchDescriptor {
        let info = try types.info(for: T.self)
        var predicates: [ModelCore.Predicate] = []
        if let predicate { predicates.append(try PredicateTranslator.translate(predicate, root: info, types: types)) }
        if let storePredicate { predicates.append(storePredicate.predicate) }
        let sorts = try sortBy.map { sort throws(ModelError) in try SortTranslation.translate(sort, root: info) }
        var prefetch: [PropertyPath] = []
        if relationshipKeyPathsForPrefetching.isEmpty {
            prefetch = info.relationships.map { PropertyPath([$0.name]) }
        } else {
            for keyPath in relationshipKeyPathsForPrefetching {
                guard let property = info.property(for: keyPath), property.isRelationship else {
                    throw ModelError(
                        .invalidArgument,
                        "\(keyPath.readableName) is not a relationship of \(info.entityName), so it can't be prefetched",
                        context: ["entity": info.entityName])
                }
                prefetch.append(PropertyPath([property.name]))
            }
        }
        guard (fetchLimit ?? 0) >= 0, (fetchOffset ?? 0) >= 0 else {
            throw ModelError(.invalidArgument, "fetchLimit and fetchOffset can't be negative")
        }
        return ModelCore.FetchDescriptor(
            entityName: info.entityName, predicate: predicates.isEmpty ? nil : .all(predicates), sortBy: sorts,
            offset: fetchOffset ?? 0, limit: fetchLimit, includesSubentities: includeSubentities,
            relationshipKeyPathsForPrefetching: prefetch
        )
    }
}

/// Sort descriptors, translated: a key path of one property of the model (or a superclass).
enum SortTranslation {
    static func translate<T>(_ sort: Foundation.SortDescriptor<T>, root: ModelTypeInfo) throws(ModelError)
        -> ModelCore.SortDescriptor
    {
        guard let keyPath = sort.keyPath else {
            throw ModelError(
                .invalidArgument,
                "a SortDescriptor without a key path (\(sort)) can't be sorted by the store: sort by a property of \(root.entityName)"
            )
        }
        guard let property = root.property(for: keyPath) else {
            throw ModelError(
                .invalidArgument,
                "the store can sort by \(root.entityName)'s own stored properties only; \(keyPath.readableName) is not one (a computed property, or a path through a relationship)",
                context: ["entity": root.entityName])
        }
        if let comparator = sort.stringComparator, comparator != .lexical {
            throw ModelError(
                .invalidArgument,
                "the store sorts strings by their UTF-8 bytes (as `comparator: .lexical` does); \(comparator) can't be sorted by the store",
                context: ["entity": root.entityName])
        }
        guard !property.isRelationship else {
            throw ModelError(
                .invalidArgument,
                "\(root.entityName).\(property.name) is a relationship; sort by one of its attributes instead",
                context: ["entity": root.entityName])
        }
        return ModelCore.SortDescriptor(PropertyPath([property.name]), ascending: sort.order == .forward)
    }
}
