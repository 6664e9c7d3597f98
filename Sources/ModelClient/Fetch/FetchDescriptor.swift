import ModelCore

/// What to fetch, as SwiftData's `FetchDescriptor`: a `#Predicate`, `SortDescriptor`s, offset
/// and limit. The predicate and the sort run in the store: a construct that can't be translated
/// is an error naming it, never a filter applied in memory.
public struct FetchDescriptor<T: PersistentModel> {
    public var predicate: Foundation.Predicate<T>?
    public var sortBy: [Foundation.SortDescriptor<T>]
    /// At most this many results; nil or 0 for all of them (0 as Core Data's `fetchLimit`).
    @ZeroIsNoLimit public var fetchLimit: Int?
    public var fetchOffset: Int?
    /// Whether the fetch sees the context's unsaved changes (true by default).
    public var includePendingChanges: Bool = true
    /// Whether objects of `T`'s subclasses are fetched too (true by default).
    public var includeSubentities: Bool = true
    /// The relationships whose objects come with the results. Empty (the default) means every
    /// relationship of `T`, so related objects can be read at once; name some to fetch fewer.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<T>] = []
    /// The attributes to read (empty, the default, reads them all). An object fetched so reads
    /// only these; reading another stops the program with a message naming it, until
    /// `context.load(_:)` loads the object whole (reads are never hidden round trips).
    public var propertiesToFetch: [PartialKeyPath<T>] = []
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
        var fetched: [String]?
        if !propertiesToFetch.isEmpty {
            fetched = []
            for keyPath in propertiesToFetch {
                guard let property = info.property(for: keyPath), !property.isRelationship else {
                    throw ModelError(
                        .invalidArgument,
                        "\(keyPath.readableName) is not a stored attribute of \(info.entityName): propertiesToFetch names attributes (relationships come with relationshipKeyPathsForPrefetching)",
                        context: ["entity": info.entityName])
                }
                fetched?.append(property.name)
            }
        }
        guard (fetchLimit ?? 0) >= 0, (fetchOffset ?? 0) >= 0 else {
            throw ModelError(.invalidArgument, "fetchLimit and fetchOffset can't be negative")
        }
        return ModelCore.FetchDescriptor(
            entityName: info.entityName, predicate: predicates.isEmpty ? nil : .all(predicates), sortBy: sorts,
            offset: fetchOffset ?? 0, limit: fetchLimit, includesSubentities: includeSubentities,
            propertiesToFetch: fetched, relationshipKeyPathsForPrefetching: prefetch
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
        if let path = try throughToOne(keyPath, root: root) {
            return ModelCore.SortDescriptor(path, ascending: sort.order == .forward)
        }
        guard let property = root.property(for: keyPath) else {
            throw ModelError(
                .invalidArgument,
                "the store can sort by \(root.entityName)'s stored properties and those of its to-one relationships' objects; \(keyPath.readableName) is neither (a computed property, or a path through a to-many relationship)",
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

    /// `relationship.attribute` when `keyPath` reads an attribute of a to-one relationship's
    /// object (`\Item.trip?.name`, `\Item.owner.name`), nil when it is not such a path.
    static func throughToOne(_ keyPath: AnyKeyPath, root: ModelTypeInfo) throws(ModelError) -> PropertyPath? {
        guard root.property(for: keyPath) == nil else { return nil }
        for relationship in root.relationships where !relationship.isToMany {
            guard let destination = relationship.destination else { continue }
            let target = try ModelTypeInfo.of(destination)
            for attribute in target.attributes {
                // The destination class's own key paths too: an inherited attribute's are
                // written against the superclass, which a path through the relationship is not.
                let own = target.selfKeyPaths.filter { $0.1 == attribute.name }.map(\.0)
                let candidates =
                    [
                        attribute.metadata.optionalChainKeyPath.flatMap {
                            relationship.metadata.keyPath.appending(path: $0)
                        },
                        relationship.metadata.keyPath.appending(path: attribute.metadata.keyPath),
                    ] + own.map { relationship.metadata.keyPath.appending(path: $0) }
                // A key path built by appending is not == to the literal that reads the same
                // way: the literal's components may be read-only where the appended ones are
                // settable, and == compares that too. Its hash does not: it combines the
                // components' identities alone, as == does besides. (Their descriptions name
                // the accessors' addresses, which a release build makes anew for each literal.)
                if candidates.contains(where: { $0.map { Self.identifiesAlike($0, keyPath) } ?? false }) {
                    return PropertyPath([relationship.name, attribute.name])
                }
            }
        }
        return nil
    }

    /// Whether two key paths go through the same properties (of the same root, to values of the
    /// same type), whether their components may be set or not.
    static func identifiesAlike(_ one: AnyKeyPath, _ other: AnyKeyPath) -> Bool {
        one == other
            || (type(of: one).rootType == type(of: other).rootType
                && type(of: one).valueType == type(of: other).valueType && one.hashValue == other.hashValue)
    }
}
