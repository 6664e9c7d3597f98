import ModelCore
import ModelStorage

extension StoreReader {
    /// Runs a validated fetch: match, sort (ties by key, ascending), offset, limit, then the
    /// result type asked for.
    func fetch(_ descriptor: FetchDescriptor) throws(ModelError) -> FetchResult {
        let entity = try schema.entity(descriptor.entityName)
        var refs = try matching(entity, descriptor.predicate, includesSubentities: descriptor.includesSubentities)
        if !descriptor.sortBy.isEmpty { refs = try sorted(refs, by: descriptor.sortBy, entity: entity) }
        refs = Self.page(refs, offset: descriptor.offset, limit: descriptor.limit)
        switch descriptor.resultType {
        case .count:
            return .count(refs.count)
        case .identifiers:
            return .identifiers(
                refs.compactMap { ref in state.row(ref).map { identifier(of: ref, entity: $0.entity) } })
        case .objects:
            let objects = refs.compactMap { ref in
                state.row(ref).map { snapshot(ref, $0, properties: descriptor.propertiesToFetch) }
            }
            let prefetched = try prefetch(descriptor.relationshipKeyPathsForPrefetching, from: refs, entity: entity)
            return .objects(objects, prefetched: prefetched)
        }
    }

    /// The objects of `entity` for which `predicate` holds, in key order.
    func matching(_ entity: ResolvedEntity, _ predicate: ModelCore.Predicate?, includesSubentities: Bool)
        throws(ModelError) -> [ObjectRef]
    {
        let evaluator = try PredicateEvaluator(reader: self, entity: entity, predicate: predicate)
        let accepted = Set(includesSubentities ? entity.descendants : [entity.name])
        let everything = accepted.count == (schema[entity.root]?.descendants.count ?? 0)
        var keys: [Int64] = []
        for (key, row) in state.tables[entity.root] ?? [:] where everything || accepted.contains(row.entity) {
            if evaluator.matches(ObjectRef(root: entity.root, key: key), row) { keys.append(key) }
        }
        keys.sort()
        return keys.map { ObjectRef(root: entity.root, key: $0) }
    }

    /// `refs` (in key order) sorted by `sortBy`: each key by `Value.compare` (folded strings when
    /// case-insensitive), nil first ascending and last descending, ties by key ascending.
    func sorted(_ refs: [ObjectRef], by sortBy: [SortDescriptor], entity: ResolvedEntity) throws(ModelError)
        -> [ObjectRef]
    {
        var paths: [ResolvedPath] = []
        for sort in sortBy { paths.append(try schema.resolve(sort.keyPath, from: entity)) }
        let keyed: [(ref: ObjectRef, keys: [Value])] = refs.map { ref in
            (
                ref,
                zip(sortBy, paths).map { sort, path in
                    let value = self.value(of: path, from: ref)
                    if sort.caseInsensitive, case .string(let text) = value {
                        return .string(TextComparison.fold(text, options: .caseInsensitive))
                    }
                    return value
                }
            )
        }
        let ordered = keyed.enumerated().sorted { a, b in
            for (index, sort) in sortBy.enumerated() {
                let result = Value.compare(a.element.keys[index], b.element.keys[index]) ?? .orderedSame
                if result != .orderedSame { return sort.ascending == (result == .orderedAscending) }
            }
            return a.offset < b.offset
        }
        return ordered.map(\.element.ref)
    }

    /// The objects reached along each prefetch path from `refs`: once each, in key order within
    /// each path, paths in the order given.
    func prefetch(_ paths: [PropertyPath], from refs: [ObjectRef], entity: ResolvedEntity) throws(ModelError)
        -> [ObjectSnapshot]
    {
        var seen = Set<ObjectRef>()
        var snapshots: [ObjectSnapshot] = []
        for path in paths {
            let resolved = try schema.resolve(path, from: entity)
            var reached = Set<ObjectRef>()
            for ref in refs { reached.formUnion(objects(along: resolved, from: ref)) }
            for ref in reached.subtracting(seen).sorted(by: { $0.key < $1.key }) {
                guard let row = state.row(ref) else { continue }
                seen.insert(ref)
                snapshots.append(snapshot(ref, row))
            }
        }
        return snapshots
    }

    /// `items` after skipping `offset` and keeping at most `limit`.
    static func page<T>(_ items: [T], offset: Int, limit: Int?) -> [T] {
        let start = min(offset, items.count)
        let end = limit.map { start + min($0, items.count - start) } ?? items.count
        return Array(items[start..<end])
    }
}
