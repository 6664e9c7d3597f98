import ModelCore
import ModelStorage

extension ReadContext {
    /// Runs a validated fetch.
    func fetch(_ descriptor: FetchDescriptor) throws -> FetchResult {
        let entity = try schema.entity(descriptor.entityName)
        let table = layout.table(for: entity)
        var compiler = compiler(for: entity)
        switch descriptor.resultType {
        case .count:
            let sql = try compiler.fetch(descriptor, columns: [])
            var count: Int64 = 0
            try query(sql, compiler.parameters) { count = $0.int64(0) }
            return .count(Int(count))
        case .identifiers:
            let sql = try compiler.fetch(descriptor, columns: [])
            var ids: [PersistentIdentifier] = []
            try query(sql, compiler.parameters) { row in
                ids.append(identifier(root: table.name, entity: row.text(1), key: row.int64(0)))
            }
            return .identifiers(ids)
        case .objects:
            let statement = try objectsQuery(descriptor)
            var objects = try decodeObjects(statement.sql, statement.parameters, table: table, plans: statement.plans)
            try loadRelationships(&objects, table: table, properties: statement.properties)
            let prefetched = try prefetch(descriptor.relationshipKeyPathsForPrefetching, from: objects, entity: entity)
            return .objects(objects, prefetched: prefetched)
        }
    }

    /// Runs a validated objects fetch without prefetching, handing the objects to `emit` in
    /// batches of at most `batchSize` objects and about `byteBudget` bytes (each with its
    /// relationships) as the statement steps, so that only a batch is ever held. Returns how many
    /// objects there were.
    func streamObjects(
        _ descriptor: FetchDescriptor, batchSize: Int, byteBudget: Int = .max,
        emit: ([ObjectSnapshot]) throws -> Void
    ) throws -> Int {
        let statement = try objectsQuery(descriptor)
        var batch: [ObjectSnapshot] = []
        batch.reserveCapacity(min(batchSize, 1_024))
        var count = 0, bytes = 0
        func flush() throws {
            try loadRelationships(&batch, table: statement.table, properties: statement.properties)
            count += batch.count
            try emit(batch)
            batch.removeAll(keepingCapacity: true)
            bytes = 0
        }
        try decodeObjects(statement.sql, statement.parameters, table: statement.table, plans: statement.plans) {
            snapshot in
            batch.append(snapshot)
            if byteBudget < .max { bytes += snapshot.estimatedSize }
            if batch.count >= batchSize || bytes >= byteBudget { try flush() }
        }
        if !batch.isEmpty { try flush() }
        return count
    }

    /// The statement of an objects fetch, with the table it reads and the plans for its rows.
    struct ObjectsQuery {
        let table: TableLayout
        let plans: RowPlans
        let properties: Set<String>?
        let sql: String
        let parameters: [Value]
    }

    /// The statement of an objects fetch: compiled, or taken from the layout's
    /// ``CompiledQueries`` when a fetch of the same shape was compiled before (not under an
    /// overlay, whose tables and keys the statement may name).
    func objectsQuery(_ descriptor: FetchDescriptor) throws -> ObjectsQuery {
        var literals: [Value] = []
        guard overlay.prefix.isEmpty, overlay.temporaryKeys.isEmpty,
            let shape = FetchShape(descriptor, literals: &literals)
        else { return try compileObjectsQuery(descriptor) }
        if let known = layout.compiledQueries.query(for: shape, literals: literals, descriptor: descriptor) {
            return known
        }
        let query = try compileObjectsQuery(descriptor)
        layout.compiledQueries.keep(query, for: shape, literals: literals, descriptor: descriptor)
        return query
    }

    private func compileObjectsQuery(_ descriptor: FetchDescriptor) throws -> ObjectsQuery {
        let entity = try schema.entity(descriptor.entityName)
        let table = layout.table(for: entity)
        var compiler = compiler(for: entity)
        let properties = descriptor.propertiesToFetch.map(Set.init)
        let selection: ObjectsSelection
        if let properties {
            let entities = descriptor.includesSubentities ? entity.descendants : [entity.name]
            let columns = layout.selectedColumns(table, entities: entities, properties: properties)
            selection = ObjectsSelection(columns: columns, plans: RowPlans(columns: columns, properties: properties))
        } else {
            selection = layout.allColumns(of: entity, includesSubentities: descriptor.includesSubentities)
        }
        let sql = try compiler.fetch(descriptor, columns: selection.columns, select: selection.select)
        return ObjectsQuery(
            table: table, plans: selection.plans, properties: properties, sql: sql, parameters: compiler.parameters)
    }

    /// The objects reached from `objects` along each path: once each, in key order within a
    /// path, paths in the order given.
    private func prefetch(_ paths: [PropertyPath], from results: [ObjectSnapshot], entity: ResolvedEntity) throws
        -> [ObjectSnapshot]
    {
        guard !paths.isEmpty else { return [] }
        let table = layout.table(for: entity)
        var seen = Set<PersistentIdentifier>()
        var prefetched: [ObjectSnapshot] = []
        for path in paths {
            let resolved = try schema.resolve(path, from: entity)
            var keys = results.compactMap { key(of: $0.id, table: table) }
            var root = table.name
            for relationship in resolved.relationships {
                let related = try relatedObjects(relationship, of: keys)
                root = schema[relationship.destination]?.root ?? relationship.destination
                let reached = layout.table(root: root)
                keys = Array(Set(related.values.flatMap { $0 }.compactMap { key(of: $0, table: reached) })).sorted()
            }
            for object in try objects(root: root, keys: keys) where seen.insert(object.id).inserted {
                prefetched.append(object)
            }
        }
        return prefetched
    }

    /// Whether ``aggregate(_:hashedGroupLimit:split:)`` with `options` would split the
    /// aggregate's scan over the readers (``ParallelGroupScan/wouldSplit(_:context:options:)``):
    /// a grouped count in a hash table, without an overlay, over a table large enough.
    func wouldSplit(_ descriptor: AggregateDescriptor, hashedGroupLimit: Int, options: ParallelGroupScan.Options)
        throws -> Bool
    {
        let entity = try schema.entity(descriptor.entityName)
        guard overlay.prefix.isEmpty,
            HashAggregate(descriptor, entity: entity, schema: schema, groupLimit: hashedGroupLimit) != nil
        else { return false }
        return try ParallelGroupScan.wouldSplit(entity, context: self, options: options)
    }

    /// Runs a validated aggregate: a grouped count in a hash table as SQLite scans
    /// (``HashAggregate``) of at most `hashedGroupLimit` groups where one applies (`hashed` is
    /// then true), otherwise with SQLite's GROUP BY. With `split`, the hash table's scan is split
    /// with the readers it names (``ParallelGroupScan``; in a read transaction that has run no
    /// statement yet, without an overlay).
    func aggregate(
        _ descriptor: AggregateDescriptor, hashedGroupLimit: Int = HashAggregate.groupLimit,
        split: (helpers: ReaderHelpers, options: ParallelGroupScan.Options)? = nil
    ) throws -> AggregateOutcome {
        let entity = try schema.entity(descriptor.entityName)
        if let hashed = HashAggregate(descriptor, entity: entity, schema: schema, groupLimit: hashedGroupLimit) {
            if let split, overlay.prefix.isEmpty {
                let scan = try ParallelGroupScan.count(
                    descriptor, entity: entity, into: hashed.emptyTable, context: self,
                    helpers: split.helpers, options: split.options)
                if let table = scan.table {
                    return AggregateOutcome(
                        rows: try hashed.rows(of: table), hashed: true, helpersJoined: scan.helpersJoined,
                        helperParts: scan.helperParts)
                }
            } else {
                var compiler = compiler(for: entity)
                let sql = try compiler.groupScan(descriptor)
                if let rows = try hashed.rows(connection.groupCounter, { try query(sql, compiler.parameters) { _ in } })
                {
                    return AggregateOutcome(rows: rows, hashed: true)
                }
            }
        }
        var compiler = compiler(for: entity)
        let sql = try compiler.aggregate(descriptor)
        let columns = try descriptor.resultColumns(for: entity, in: schema)
        var rows: [AggregateRow] = []
        try query(sql, compiler.parameters) { row in
            var result: AggregateRow = [:]
            for (index, column) in columns.enumerated() {
                result[column.name] = try row.value(Int32(index), as: column.type)
            }
            rows.append(result)
        }
        return AggregateOutcome(rows: rows, hashed: false)
    }
}

/// An aggregate's rows, and how they were computed: in a hash table (``HashAggregate``) or by
/// SQLite's GROUP BY, and how many readers helped a split count (``ParallelGroupScan``) and
/// with how many parts.
struct AggregateOutcome: Sendable {
    let rows: [AggregateRow]
    let hashed: Bool
    var helpersJoined = 0
    var helperParts = 0
}
