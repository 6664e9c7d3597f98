import ModelCore
import ModelStorage

extension ReadContext {
    /// Reads the rows of an objects statement (`_pk`, `_entity`, `_version`, then the columns
    /// `plans` were made for) into snapshots of `table`'s objects, with their foreign-key
    /// relationships; the others are filled by ``loadRelationships(_:table:properties:)``.
    func decodeObjects(_ sql: String, _ parameters: [Value], table: TableLayout, plans: RowPlans) throws
        -> [ObjectSnapshot]
    {
        var snapshots: [ObjectSnapshot] = []
        try decodeObjects(sql, parameters, table: table, plans: plans) { snapshots.append($0) }
        return snapshots
    }

    /// Reads the rows of an objects statement as ``decodeObjects(_:_:table:plans:)`` does,
    /// handing each snapshot to `body` as its row is read.
    func decodeObjects(
        _ sql: String, _ parameters: [Value], table: TableLayout, plans: RowPlans,
        _ body: (ObjectSnapshot) throws -> Void
    ) throws {
        var plans = plans
        var last: RowPlan?
        let onlyEntity = table.entities.count == 1 ? table.entities.first : nil
        try query(sql, parameters) { row in
            guard let plan = self.plan(of: row, after: last, onlyEntity: onlyEntity, in: &plans) else { return }
            last = plan
            var attributes = plan.attributeTable
            for attribute in plan.attributes {
                guard let position = attribute.position else { continue }
                attributes.values[attribute.index] = try row.value(position, as: attribute.type)
            }
            var relationships: [String: RelationshipValue] = [:]
            for foreignKey in plan.foreignKeys { relationships[foreignKey.name] = .toOne(target(of: row, foreignKey)) }
            try body(
                ObjectSnapshot(
                    id: identifier(root: table.name, entity: plan.entityName, key: row.int64(0)), version: row.int64(2),
                    attributes: attributes, relationships: relationships))
        }
    }

    /// The plan of `row`'s entity (its column 1): `last` when the row is of its entity (rows of
    /// one entity usually come together; told by the text's bytes, without making a string of
    /// it), else looked up; nil for an entity the schema does not have. A table of one entity
    /// (`onlyEntity`, ``TableLayout/entities``) holds that entity's rows alone: its column 1 is
    /// not read (about 300 instructions an object, SQLite's two calls included; the statement
    /// selects NULL there, ``SQLCompiler/entityColumn``), and a row another tool wrote with
    /// another name there is read as the entity's.
    @inline(__always)
    func plan(of row: SQLiteStatement, after last: RowPlan?, onlyEntity: String?, in plans: inout RowPlans)
        -> RowPlan?
    {
        if let onlyEntity {
            if let last { return last }
            if let only = plans.onlyPlan, only.entityName == onlyEntity { return only }
            return plans.plan(for: onlyEntity, schema: schema)
        }
        if let last, row.textEquals(1, last.entityNameBytes) { return last }
        if last == nil, let known = plans.knownPlan(of: row) { return known }
        return plans.plan(for: row.text(1), schema: schema)
    }

    /// The target of `foreignKey` in `row` (its column, then the target's `_entity`); nil when
    /// not set. A dangling reference has no target row: it keeps the destination's name.
    func target(of row: SQLiteStatement, _ foreignKey: RowPlan.ForeignKey) -> PersistentIdentifier? {
        guard let index = foreignKey.position, let target = row.optionalInt64(index) else { return nil }
        let targetEntity = row.isNull(index + 1) ? foreignKey.destination : row.text(index + 1)
        return identifier(root: foreignKey.root, entity: targetEntity, key: target)
    }

    /// Fills the relationships that are not foreign keys of these objects (to-many, and to-one
    /// whose key the other side holds) with one query per relationship.
    func loadRelationships(_ snapshots: inout [ObjectSnapshot], table: TableLayout, properties: Set<String>?) throws {
        var owners: [String: (relationship: ResolvedRelationship, rows: [Int])] = [:]
        var order: [String] = []
        // Objects of one entity usually come together: its relationships are looked up once.
        var lastEntity: String?
        var loaded: [ResolvedRelationship] = []
        for (index, snapshot) in snapshots.enumerated() {
            if snapshot.id.entityName != lastEntity {
                lastEntity = snapshot.id.entityName
                loaded =
                    schema[snapshot.id.entityName]?.relationships.filter {
                        $0.storage != .foreignKey && (properties?.contains($0.name) ?? true)
                    } ?? []
            }
            for relationship in loaded {
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
                snapshots[row].relationships[relationship.name] =
                    relationship.isToMany ? .toMany(targets) : .toOne(targets.first)
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
    func relatedObjects(_ relationship: ResolvedRelationship, of owners: [Int64]) throws -> [Int64:
        [PersistentIdentifier]]
    {
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
        guard !keys.isEmpty, let statement = layout.objectsByKey(root: root) else { return [] }
        // One key, a point read, is looked up directly: reading a JSON list through json_each
        // cost about as much as the lookup itself.
        let (sql, parameter) =
            keys.count == 1
            ? (statement.selectOne, Value.int(keys.first!))
            : (
                statement.selectFrom + " WHERE t0.\"_pk\" IN (SELECT value FROM json_each(?1)) ORDER BY t0.\"_pk\"",
                Self.keyList(keys)
            )
        var snapshots = try decodeObjects(sql, [parameter], table: statement.table, plans: statement.plans)
        try loadRelationships(&snapshots, table: statement.table, properties: nil)
        return snapshots
    }
}
