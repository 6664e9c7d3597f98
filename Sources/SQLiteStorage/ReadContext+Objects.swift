import ModelCore

extension ReadContext {
    /// The columns to select for objects of `entities` of `table`: every column those entities
    /// use, or only those of the named `properties`.
    func selectedColumns(_ table: TableLayout, entities: [String], properties: Set<String>?) -> [SelectedColumn] {
        var used = Set<String>()
        for name in entities {
            guard let entity = schema[name] else { continue }
            entity.attributes.forEach { used.insert($0.name) }
            entity.relationships.filter { $0.storage == .foreignKey }.forEach { used.insert($0.name) }
        }
        if let properties { used.formIntersection(properties) }
        return table.columns.filter { used.contains($0.name) }.map { column in
            SelectedColumn(name: column.name, kind: column.type.map { .attribute($0) } ?? .reference)
        }
    }

    /// Reads the rows of an objects statement (`_pk`, `_entity`, `_version`, then `columns`) into
    /// snapshots of `table`'s objects, with their foreign-key relationships; the others are
    /// filled by ``loadRelationships(_:table:properties:)``.
    func decodeObjects(_ sql: String, _ parameters: [Value], table: TableLayout, columns: [SelectedColumn],
                       properties: Set<String>?) throws -> [ObjectSnapshot] {
        var snapshots: [ObjectSnapshot] = []
        try decodeObjects(sql, parameters, table: table, columns: columns, properties: properties) { snapshots.append($0) }
        return snapshots
    }

    /// Reads the rows of an objects statement as ``decodeObjects(_:_:table:columns:properties:)``
    /// does, handing each snapshot to `body` as its row is read.
    func decodeObjects(_ sql: String, _ parameters: [Value], table: TableLayout, columns: [SelectedColumn],
                       properties: Set<String>?, _ body: (ObjectSnapshot) throws -> Void) throws {
        var positions: [String: Int32] = [:]
        var position: Int32 = 3
        for column in columns {
            positions[column.name] = position
            if case .reference = column.kind { position += 2 } else { position += 1 }
        }
        // Each entity's plan is made at its first row; rows of one entity usually come together.
        var plans: [String: RowPlan] = [:]
        var last: RowPlan?
        try query(sql, parameters) { row in
            let key = row.int64(0), entityName = row.text(1)
            let plan: RowPlan
            if let last, last.entityName == entityName {
                plan = last
            } else if let known = plans[entityName] {
                plan = known
            } else {
                guard let entity = schema[entityName] else { return }
                plan = RowPlan(entity, positions: positions, properties: properties, schema: schema)
                plans[entityName] = plan
            }
            last = plan
            var attributes = plan.attributeTable
            for attribute in plan.attributes {
                guard let position = attribute.position else { continue }
                attributes.values[attribute.index] = try row.value(position, as: attribute.type)
            }
            var relationships: [String: RelationshipValue] = [:]
            for foreignKey in plan.foreignKeys {
                guard let index = foreignKey.position, let target = row.optionalInt64(index) else {
                    relationships[foreignKey.name] = .toOne(nil)
                    continue
                }
                // A dangling reference has no target row: it keeps the destination's name.
                let targetEntity = row.isNull(index + 1) ? foreignKey.destination : row.text(index + 1)
                relationships[foreignKey.name] = .toOne(identifier(root: foreignKey.root, entity: targetEntity, key: target))
            }
            try body(ObjectSnapshot(id: identifier(root: table.name, entity: entityName, key: key), version: row.int64(2),
                                    attributes: attributes, relationships: relationships))
        }
    }

    /// Fills the relationships that are not foreign keys of these objects (to-many, and to-one
    /// whose key the other side holds) with one query per relationship.
    func loadRelationships(_ snapshots: inout [ObjectSnapshot], table: TableLayout, properties: Set<String>?) throws {
        var owners: [String: (relationship: ResolvedRelationship, rows: [Int])] = [:]
        var order: [String] = []
        for (index, snapshot) in snapshots.enumerated() {
            guard let entity = schema[snapshot.id.entityName] else { continue }
            for relationship in entity.relationships where relationship.storage != .foreignKey && (properties?.contains(relationship.name) ?? true) {
                let key = "\(relationship.declaringEntity).\(relationship.name)"
                if owners[key] == nil { order.append(key) }
                owners[key, default: (relationship, [])].rows.append(index)
            }
        }
        for name in order {
            guard let (relationship, rows) = owners[name] else { continue }
            let ownerKeys = rows.compactMap { key(of: snapshots[$0].id, table: table) }
            let related = try relatedObjects(relationship, of: ownerKeys)
            for row in rows {
                let targets = key(of: snapshots[row].id, table: table).flatMap { related[$0] } ?? []
                snapshots[row].relationships[relationship.name] = relationship.isToMany ? .toMany(targets) : .toOne(targets.first)
            }
        }
    }

    /// The key of an object of `table` as stored (an overlay insert's allocated key).
    func key(of id: PersistentIdentifier, table: TableLayout) -> Int64? {
        switch id.key {
        case .permanent(let key): key
        case .temporary(let uuid): overlay.temporaryKeys[uuid]
        }
    }

    /// The objects related to each of `owners` through `relationship`, in key order.
    func relatedObjects(_ relationship: ResolvedRelationship, of owners: [Int64]) throws -> [Int64: [PersistentIdentifier]] {
        guard !owners.isEmpty else { return [:] }
        let targetRoot = schema[relationship.destination]?.root ?? relationship.destination
        let target = layout.table(root: targetRoot)
        let sql: String
        switch relationship.storage {
        case .inverseForeignKey(_, let name):
            // The holder declares the inverse on the destination or one of its ancestors: same table.
            sql = """
                SELECT h.\(SQL.quote(name)), h."_pk", h."_entity" FROM \(target.quoted) AS h \
                WHERE h.\(SQL.quote(name)) IN (SELECT value FROM json_each(?1)) ORDER BY h."_pk"
                """
        case .joinTable(let join, let isOwner):
            let (mine, theirs) = isOwner ? ("source", "target") : ("target", "source")
            sql = """
                SELECT j."\(mine)", j."\(theirs)", o."_entity" FROM \(SQL.quote(join.name)) AS j \
                JOIN \(target.quoted) AS o ON o."_pk" = j."\(theirs)" \
                WHERE j."\(mine)" IN (SELECT value FROM json_each(?1)) ORDER BY j."\(theirs)"
                """
        case .foreignKey:
            let source = layout.table(root: schema[relationship.declaringEntity]?.root ?? relationship.declaringEntity)
            sql = """
                SELECT t."_pk", t.\(SQL.quote(relationship.name)), o."_entity" FROM \(source.quoted) AS t \
                LEFT JOIN \(target.quoted) AS o ON o."_pk" = t.\(SQL.quote(relationship.name)) \
                WHERE t."_pk" IN (SELECT value FROM json_each(?1)) AND t.\(SQL.quote(relationship.name)) IS NOT NULL
                """
        }
        var related: [Int64: [PersistentIdentifier]] = [:]
        try query(sql, [Self.keyList(owners)]) { row in
            let entity = row.isNull(2) ? relationship.destination : row.text(2)
            related[row.int64(0), default: []].append(identifier(root: targetRoot, entity: entity, key: row.int64(1)))
        }
        return related
    }

    /// The objects of the hierarchy `root` with these keys, with every property, in key order.
    func objects<C: Collection>(root: String, keys: C) throws -> [ObjectSnapshot] where C.Element == Int64 {
        guard !keys.isEmpty, let rootEntity = schema[root] else { return [] }
        let table = layout.table(root: root)
        var compiler = compiler(for: rootEntity)
        let columns = selectedColumns(table, entities: table.entities, properties: nil)
        let select = compiler.objectSelect(columns)
        let list = compiler.bind(Self.keyList(keys))
        let sql = "SELECT \(select) FROM \(table.quoted) AS t0\(compiler.root.joinClause) WHERE t0.\"_pk\" IN (SELECT value FROM json_each(\(list))) ORDER BY t0.\"_pk\""
        var snapshots = try decodeObjects(sql, compiler.parameters, table: table, columns: columns, properties: nil)
        try loadRelationships(&snapshots, table: table, properties: nil)
        return snapshots
    }
}

/// What ``ReadContext/decodeObjects(_:_:table:columns:properties:_:)`` reads from the rows of one
/// entity: each attribute and foreign key it returns, with its column (nil when not selected).
private struct RowPlan {
    let entityName: String
    /// Every attribute returned, null: each row's attributes are written into a copy of it, at
    /// each attribute's index, which costs one copy of the table rather than a hash and a
    /// growing table per attribute.
    let attributeTable: [String: Value]
    let attributes: [(index: Dictionary<String, Value>.Index, type: AttributeType, position: Int32?)]
    let foreignKeys: [(name: String, destination: String, root: String, position: Int32?)]

    init(_ entity: ResolvedEntity, positions: [String: Int32], properties: Set<String>?, schema: ResolvedSchema) {
        entityName = entity.name
        let returned = entity.attributes.filter { properties?.contains($0.name) ?? true }
        let table = Dictionary(returned.map { ($0.name, Value.null) }, uniquingKeysWith: { first, _ in first })
        attributeTable = table
        attributes = returned.map { (table.index(forKey: $0.name)!, $0.type, positions[$0.name]) }
        foreignKeys = entity.relationships.filter { $0.storage == .foreignKey && (properties?.contains($0.name) ?? true) }.map {
            ($0.name, $0.destination, schema[$0.destination]?.root ?? $0.destination, positions[$0.name])
        }
    }
}
