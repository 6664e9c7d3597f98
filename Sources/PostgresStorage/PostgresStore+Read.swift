import Foundation
import ModelCore
import ModelStorage
import PostgresNIO

extension PostgresStore {
    /// Fetches with one compiled statement (``SQLCompiler`` in ``PostgresDialect``), in one
    /// transaction with the reads of the objects' relationships and prefetched objects; with
    /// `overlay` shadowing the tables it changes (``PostgresOverlay``).
    public func fetch(_ descriptor: FetchDescriptor, overlay: ChangeSet?) async throws -> FetchResult {
        let layout = try await currentLayout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        guard overlay?.isEmpty ?? true, !PostgresRead.readsMore(validated, in: layout.schema) else {
            return try await read(layout, overlay: overlay) { try $0.fetch(validated) }
        }
        // A fetch of one statement is a snapshot of its own: no transaction, and the statement
        // is sent from this task.
        let storeIdentifier = storeIdentifier
        return try await readers.runAsync { session in
            let objects = PostgresObjects(session, layout: layout, storeIdentifier: storeIdentifier)
            let plan = try PostgresRead(objects: objects).plan(validated)
            return try plan.finish(try await session.query(plan.sql, plan.parameters), objects)
        }
    }

    /// Grouped aggregates computed by PostgreSQL, with `overlay` shadowing the tables it changes.
    public func aggregate(_ descriptor: AggregateDescriptor, overlay: ChangeSet?) async throws -> [AggregateRow] {
        let layout = try await currentLayout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        return try await read(layout, overlay: overlay) { try $0.aggregate(validated) }
    }

    /// A fetch and the history token read in the same snapshot (one REPEATABLE READ transaction;
    /// the token's row commits with the save that takes it).
    public func fetchWithToken(_ descriptor: FetchDescriptor) async throws -> (FetchResult, HistoryToken?) {
        let layout = try await currentLayout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let metadata = metadata
        return try await read(layout, overlay: nil) { read in
            (try read.fetch(validated), try Self.historyToken(read.objects.session, metadata: metadata))
        }
    }

    /// Grouped aggregates and the history token read in the same snapshot.
    public func aggregateWithToken(_ descriptor: AggregateDescriptor) async throws -> ([AggregateRow], HistoryToken?) {
        let layout = try await currentLayout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let metadata = metadata
        return try await read(layout, overlay: nil) { read in
            (try read.aggregate(validated), try Self.historyToken(read.objects.session, metadata: metadata))
        }
    }

    /// Runs `body` in a transaction that sees one snapshot of the store, with `overlay`
    /// installed when it changes anything (then rolled back, so nothing is written).
    private func read<T: Sendable>(
        _ layout: PostgresLayout, overlay changes: ChangeSet?, _ body: @escaping @Sendable (PostgresRead) throws -> T
    ) async throws -> T {
        let storeIdentifier = storeIdentifier, metadata = metadata
        return try await readers.run { session in
            let plain = PostgresRead(
                objects: PostgresObjects(session: session, layout: layout, storeIdentifier: storeIdentifier))
            guard let changes, !changes.isEmpty else {
                return try session.transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                    try body(plain)
                }
            }
            try session.query("BEGIN ISOLATION LEVEL REPEATABLE READ")
            defer { _ = try? session.query("ROLLBACK") }
            var objects = plain.objects
            objects.overlay = try PostgresOverlay.install(
                changes, layout: layout, metadata: metadata, storeIdentifier: storeIdentifier, session: session)
            return try body(PostgresRead(objects: objects))
        }
    }
}

/// The reads of one fetch or aggregate on one connection.
struct PostgresRead {
    /// The reader of objects, with the overlay installed, if any.
    let objects: PostgresObjects

    var layout: PostgresLayout { objects.layout }
    var schema: ResolvedSchema { layout.schema }

    private func compiler(for entity: ResolvedEntity) -> SQLCompiler {
        SQLCompiler(
            layout: layout, dialect: PostgresDialect.shared, entity: entity,
            temporaryKeys: objects.overlay.temporaryKeys)
    }

    /// Runs a validated fetch.
    func fetch(_ descriptor: FetchDescriptor) throws -> FetchResult {
        let plan = try plan(descriptor)
        let result = try plan.finish(try objects.query(plan.sql, plan.parameters), objects)
        guard case .objects(var results, _) = result, Self.readsMore(descriptor, in: schema) else { return result }
        let entity = try schema.entity(descriptor.entityName)
        try objects.loadRelationships(&results, properties: plan.properties)
        let prefetched = try prefetch(descriptor.relationshipKeyPathsForPrefetching, from: results, entity: entity)
        return .objects(results, prefetched: prefetched)
    }

    /// A fetch's compiled statement and how its rows become the result.
    struct FetchPlan {
        let sql: String
        let parameters: [Value]
        /// The properties objects are read with (nil: all).
        let properties: Set<String>?
        let finish: ([PostgresRow], PostgresObjects) throws -> FetchResult
    }

    /// Whether a validated fetch takes more than its one statement: objects with relationships
    /// the rows do not hold (to-many, or a key the other side keeps), or objects to prefetch.
    static func readsMore(_ descriptor: FetchDescriptor, in schema: ResolvedSchema) -> Bool {
        guard descriptor.resultType == .objects, let entity = schema[descriptor.entityName] else { return false }
        let properties = descriptor.propertiesToFetch.map(Set.init)
        let entities = descriptor.includesSubentities ? entity.descendants : [entity.name]
        return !descriptor.relationshipKeyPathsForPrefetching.isEmpty
            || entities.contains { name in
                schema[name]?.relationships.contains {
                    $0.storage != .foreignKey && (properties?.contains($0.name) ?? true)
                } ?? false
            }
    }

    /// Compiles a validated fetch.
    func plan(_ descriptor: FetchDescriptor) throws -> FetchPlan {
        let entity = try schema.entity(descriptor.entityName)
        var compiler = compiler(for: entity)
        switch descriptor.resultType {
        case .count:
            let sql = try compiler.fetch(descriptor, columns: [])
            return FetchPlan(sql: sql, parameters: compiler.parameters, properties: nil) { rows, _ in
                .count(Int(try rows.first.flatMap { try $0.first.flatMap(PostgresValues.int) } ?? 0))
            }
        case .identifiers:
            let sql = try compiler.fetch(descriptor, columns: [])
            return FetchPlan(sql: sql, parameters: compiler.parameters, properties: nil) {
                rows, objects in
                .identifiers(
                    try rows.compactMap { row in
                        let cells = Array(row)
                        guard let key = try PostgresValues.int(cells[0]), let name = try PostgresValues.text(cells[1])
                        else { return nil }
                        return objects.identifier(root: entity.root, entity: name, key: key)
                    })
            }
        case .objects:
            let table = layout.table(for: entity)
            let properties = descriptor.propertiesToFetch.map(Set.init)
            let entities = descriptor.includesSubentities ? entity.descendants : [entity.name]
            let columns = layout.selectedColumns(table, entities: entities, properties: properties)
            let sql = try compiler.fetch(descriptor, columns: columns)
            return FetchPlan(sql: sql, parameters: compiler.parameters, properties: properties) {
                rows, objects in
                .objects(try objects.decode(rows, columns: columns, properties: properties), prefetched: [])
            }
        }
    }

    /// The objects at the end of each path from `results`: once each, in key order within a
    /// path, paths in the order given (as the SQLite backend prefetches).
    private func prefetch(_ paths: [PropertyPath], from results: [ObjectSnapshot], entity: ResolvedEntity) throws
        -> [ObjectSnapshot]
    {
        guard !paths.isEmpty else { return [] }
        var seen = Set<PersistentIdentifier>()
        var prefetched: [ObjectSnapshot] = []
        for path in paths {
            let resolved = try schema.resolve(path, from: entity)
            var root = entity.root
            var keys = results.compactMap { key(of: $0.id, root: entity.root) }
            for relationship in resolved.relationships {
                // The objects reached so far, with every relationship: results may lack it.
                let reached = try objects.objects(root: root, keys: Array(Set(keys)).sorted())
                root = schema[relationship.destination]?.root ?? relationship.destination
                var next = Set<Int64>()
                for object in reached {
                    switch object.relationships[relationship.name] {
                    case .toOne(let id?)?: if let key = key(of: id, root: root) { next.insert(key) }
                    case .toMany(let ids)?: next.formUnion(ids.compactMap { key(of: $0, root: root) })
                    default: break
                    }
                }
                keys = next.sorted()
            }
            for object in try objects.objects(root: root, keys: keys) where seen.insert(object.id).inserted {
                prefetched.append(object)
            }
        }
        return prefetched
    }

    /// The key of an object of the hierarchy `root`: its permanent key, or the key the overlay
    /// gives an inserted object.
    private func key(of id: PersistentIdentifier, root: String) -> Int64? {
        guard schema[id.entityName]?.root == root else { return nil }
        return objects.key(of: id)
    }

    /// Runs a validated aggregate with PostgreSQL's GROUP BY.
    func aggregate(_ descriptor: AggregateDescriptor) throws -> [AggregateRow] {
        let entity = try schema.entity(descriptor.entityName)
        var compiler = compiler(for: entity)
        let sql = try compiler.aggregate(descriptor)
        let columns = try descriptor.resultColumns(for: entity, in: schema)
        return try objects.query(sql, compiler.parameters).map { row in
            let cells = Array(row)
            var result: AggregateRow = [:]
            for (index, column) in columns.enumerated() {
                result[column.name] = try PostgresValues.aggregateValue(cells[index], as: column.type)
            }
            return result
        }
    }
}

extension PostgresValues {
    /// An aggregate's cell as a value of `type`: sums of ints come back as `numeric` and are an
    /// int when they fit, a double otherwise (as ``NumericAccumulator`` sums).
    static func aggregateValue(_ cell: PostgresCell, as type: AttributeType) throws -> Value {
        guard cell.bytes != nil else { return .null }
        if type == .int, cell.dataType == .numeric {
            let sum = try PostgresValues.decoded(cell, Decimal.self)
            if let exact = Int64(exactly: NSDecimalNumber(decimal: sum).int64Value),
                Decimal(exact) == sum
            {
                return .int(exact)
            }
            return .double(NSDecimalNumber(decimal: sum).doubleValue)
        }
        return try value(cell, as: type)
    }
}
