import Foundation
import ModelCore
import ModelStorage
import PostgresNIO

/// Reads objects inside the caller's transaction: a hierarchy's rows with their foreign keys
/// (and each target's entity), then each other relationship with one query per relationship,
/// as the SQLite backend does.
struct PostgresObjects {
    let session: PostgresSession
    let layout: PostgresLayout
    let storeIdentifier: UUID
    /// What an overlay puts in front of the stored rows (``PostgresOverlay``), or nothing.
    var overlay = PostgresOverlay.Installed()

    /// Runs `sql` behind the overlay's `WITH` clause. Statements name tables without their
    /// namespace (the connection's search path has it), so the overlay's can shadow them.
    func query(_ sql: String, keys: [Int64]? = nil, _ binds: [Value] = []) throws -> [PostgresRow] {
        try session.query(overlay.prefix + sql, keys: keys, binds)
    }

    /// The identifier of the object `key` of the hierarchy `root`: its overlay insert's
    /// temporary identifier, or the permanent one.
    func identifier(root: String, entity: String, key: Int64) -> PersistentIdentifier {
        if let temporary = overlay.temporaryIDs[root]?[key] { return temporary }
        return PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }

    var schema: ResolvedSchema { layout.schema }

    /// The key `id` is stored under: its permanent key, or the key the overlay gives an object
    /// the session inserts (whose relationships are read as a stored object's are).
    func key(of id: PersistentIdentifier) -> Int64? {
        switch id.key {
        case .permanent(let key): key
        case .temporary(let uuid): overlay.temporaryKeys[uuid]
        }
    }

    /// The objects of the hierarchy `root` with these keys, in key order.
    func objects(root: String, keys: [Int64]) throws -> [ObjectSnapshot] {
        guard !keys.isEmpty, let (sql, columns, reads) = objectsStatement(root: root) else { return [] }
        var snapshots = try decode(try query(sql, keys: keys), columns: columns, properties: nil, known: reads)
        try loadRelationships(&snapshots, properties: nil)
        return snapshots
    }

    /// The statement reading the objects of the hierarchy `root` whose keys are bound as $1, in
    /// key order, and the columns it selects; nil for a hierarchy the schema lacks. Compiled once
    /// per layout (``PostgresLayout/objectStatements``): the same text at every read, which also
    /// lets a reader's connection keep it prepared (``PreparedStatements``).
    func objectsStatement(root: String) -> PostgresLayout.ObjectsStatement? {
        layout.objectStatements[root]
    }

    /// ``objectsStatement(root:)`` compiled for `layout`.
    static func compileObjectsStatement(root: String, layout: PostgresLayout) -> PostgresLayout.ObjectsStatement? {
        guard let rootEntity = layout.schema[root] else { return nil }
        let table = layout.table(root: root)
        var compiler = SQLCompiler(layout: layout, dialect: PostgresDialect.shared, entity: rootEntity)
        let columns = layout.selectedColumns(table, entities: table.entities, properties: nil)
        let select = compiler.objectSelect(columns)
        var reads: [String: ColumnReads] = [:]
        for name in table.entities {
            guard let entity = layout.schema[name] else { continue }
            reads[name] = ColumnReads(entity, columns: columns, properties: nil, schema: layout.schema)
        }
        return (
            "SELECT \(select) FROM \(SQL.quote(root)) AS t0\(compiler.root.joinClause) WHERE t0.\"_pk\" = ANY($1) ORDER BY t0.\"_pk\"",
            columns, reads
        )
    }

    /// Fills the relationships that are not foreign keys (to-many, and to-one whose key the other
    /// side holds), one query per relationship.
    func loadRelationships(_ snapshots: inout [ObjectSnapshot], properties: Set<String>?) throws {
        for load in relationshipLoads(snapshots, properties: properties) {
            let owners = load.rows.compactMap { key(of: snapshots[$0].id) }
            guard !owners.isEmpty, let sql = relatedStatement(load.relationship) else { continue }
            fill(&snapshots, load, related: try related(try query(sql, keys: owners), load.relationship))
        }
    }

    /// A relationship to fill and the positions of the snapshots that have it.
    struct RelationshipLoad {
        let relationship: ResolvedRelationship
        var rows: [Int]
    }

    /// The relationships of `snapshots` that are not foreign keys, in the order first met.
    func relationshipLoads(_ snapshots: [ObjectSnapshot], properties: Set<String>?) -> [RelationshipLoad] {
        var loads: [RelationshipLoad] = []
        var positions: [String: Int] = [:]
        for (index, snapshot) in snapshots.enumerated() {
            for relationship in schema[snapshot.id.entityName]?.relationships ?? []
            where relationship.storage != .foreignKey && (properties?.contains(relationship.name) ?? true) {
                let name = "\(relationship.declaringEntity).\(relationship.name)"
                if let position = positions[name] {
                    loads[position].rows.append(index)
                } else {
                    positions[name] = loads.count
                    loads.append(RelationshipLoad(relationship: relationship, rows: [index]))
                }
            }
        }
        return loads
    }

    /// Sets `load`'s relationship of its snapshots to their `related` objects.
    func fill(_ snapshots: inout [ObjectSnapshot], _ load: RelationshipLoad, related: [Int64: [PersistentIdentifier]]) {
        for row in load.rows {
            let targets = key(of: snapshots[row].id).flatMap { related[$0] } ?? []
            snapshots[row].relationships[load.relationship.name] =
                load.relationship.isToMany ? .toMany(targets) : .toOne(targets.first)
        }
    }

    /// The statement reading the objects related through `relationship` to owners whose keys
    /// are bound as $1: owner, key and entity, in key order.
    func relatedStatement(_ relationship: ResolvedRelationship) -> String? {
        let targetRoot = schema[relationship.destination]?.root ?? relationship.destination
        let target = SQL.quote(targetRoot)
        switch relationship.storage {
        case .inverseForeignKey(_, let name):
            return """
                SELECT h.\(SQL.quote(name)), h."_pk", h."_entity" FROM \(target) AS h \
                WHERE h.\(SQL.quote(name)) = ANY($1) ORDER BY h."_pk"
                """
        case .joinTable(let join, let isOwner):
            let (mine, theirs) = isOwner ? ("source", "target") : ("target", "source")
            return """
                SELECT j."\(mine)", j."\(theirs)", o."_entity" FROM \(SQL.quote(join.name)) AS j \
                JOIN \(target) AS o ON o."_pk" = j."\(theirs)" WHERE j."\(mine)" = ANY($1) ORDER BY j."\(theirs)"
                """
        case .foreignKey:
            return nil
        }
    }

    /// The objects related to each owner, from the rows of ``relatedStatement(_:)``.
    func related(_ rows: [PostgresRow], _ relationship: ResolvedRelationship) throws -> [Int64: [PersistentIdentifier]]
    {
        let targetRoot = schema[relationship.destination]?.root ?? relationship.destination
        var related: [Int64: [PersistentIdentifier]] = [:]
        for row in rows {
            let cells = Array(row)
            guard let owner = try PostgresValues.int(cells[0]), let key = try PostgresValues.int(cells[1]) else {
                continue
            }
            let entity = try PostgresValues.text(cells[2]) ?? relationship.destination
            related[owner, default: []].append(identifier(root: targetRoot, entity: entity, key: key))
        }
        return related
    }
}
