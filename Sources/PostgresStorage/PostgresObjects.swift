import Foundation
import ModelCore
import PostgresNIO

/// Reads objects with every property, by key, inside the caller's transaction: a hierarchy's
/// row with its foreign keys (and each target's entity), then each other relationship with one
/// query per relationship, as the SQLite backend does.
struct PostgresObjects {
    let session: PostgresSession
    let layout: PostgresLayout
    let storeIdentifier: UUID

    var schema: ResolvedSchema { layout.schema }

    /// The objects of the hierarchy `root` with these keys, in key order.
    func objects(root: String, keys: [Int64]) throws -> [ObjectSnapshot] {
        guard !keys.isEmpty, let table = layout.table(root: root) else { return [] }
        var select = ["t.\"_pk\"", "t.\"_entity\"", "t.\"_version\""]
        var joins: [String] = []
        for (index, column) in table.columns.enumerated() {
            select.append("t.\(PostgresSQL.quote(column.name))")
            if column.type == nil {
                let target = foreignKeyTarget(table, column.name)
                select.append("r\(index).\"_entity\"")
                joins.append(
                    "LEFT JOIN \(layout.qualified(target)) AS r\(index) ON r\(index).\"_pk\" = t.\(PostgresSQL.quote(column.name))"
                )
            }
        }
        let rows = try session.query(
            "SELECT \(select.joined(separator: ", ")) FROM \(layout.qualified(root)) AS t \(joins.joined(separator: " ")) WHERE t.\"_pk\" = ANY($1) ORDER BY t.\"_pk\"",
            keys: keys)
        var snapshots: [ObjectSnapshot] = []
        for row in rows {
            let cells = Array(row)
            guard let key = try PostgresValues.int(cells[0]), let entityName = try PostgresValues.text(cells[1]),
                let version = try PostgresValues.int(cells[2]), let entity = schema[entityName]
            else { continue }
            var position = 3
            var attributes: [String: Value] = [:]
            var relationships: [String: RelationshipValue] = [:]
            for column in table.columns {
                if let type = column.type {
                    if entity.attribute(column.name) != nil {
                        attributes[column.name] = try PostgresValues.value(cells[position], as: type)
                    }
                    position += 1
                } else {
                    if let relationship = entity.relationship(column.name) {
                        if let target = try PostgresValues.int(cells[position]) {
                            let targetEntity = try PostgresValues.text(cells[position + 1]) ?? relationship.destination
                            relationships[column.name] = .toOne(
                                PersistentIdentifier(
                                    storeIdentifier: storeIdentifier, entityName: targetEntity, key: .permanent(target))
                            )
                        } else {
                            relationships[column.name] = .toOne(nil)
                        }
                    }
                    position += 2
                }
            }
            snapshots.append(
                ObjectSnapshot(
                    id: PersistentIdentifier(
                        storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(key)),
                    version: version, attributes: attributes, relationships: relationships))
        }
        try loadRelationships(&snapshots)
        return snapshots
    }

    /// The root of the destination of the foreign key `name` stored in `table`.
    private func foreignKeyTarget(_ table: PostgresLayout.Table, _ name: String) -> String {
        for entityName in table.entities {
            if let relationship = schema[entityName]?.relationship(name), relationship.storage == .foreignKey {
                return schema[relationship.destination]?.root ?? relationship.destination
            }
        }
        return table.name
    }

    /// Fills the relationships that are not foreign keys (to-many, and to-one whose key the other
    /// side holds), one query per relationship.
    private func loadRelationships(_ snapshots: inout [ObjectSnapshot]) throws {
        var owners: [String: (relationship: ResolvedRelationship, rows: [Int])] = [:]
        var order: [String] = []
        for (index, snapshot) in snapshots.enumerated() {
            for relationship in schema[snapshot.id.entityName]?.relationships ?? []
            where relationship.storage != .foreignKey {
                let name = "\(relationship.declaringEntity).\(relationship.name)"
                if owners[name] == nil { order.append(name) }
                owners[name, default: (relationship, [])].rows.append(index)
            }
        }
        for name in order {
            guard let (relationship, rows) = owners[name] else { continue }
            let related = try relatedObjects(relationship, of: rows.compactMap { snapshots[$0].id.primaryKey })
            for row in rows {
                let targets = snapshots[row].id.primaryKey.flatMap { related[$0] } ?? []
                snapshots[row].relationships[relationship.name] =
                    relationship.isToMany ? .toMany(targets) : .toOne(targets.first)
            }
        }
    }

    /// The objects related to each of `owners` through `relationship`, in key order.
    private func relatedObjects(_ relationship: ResolvedRelationship, of owners: [Int64]) throws -> [Int64:
        [PersistentIdentifier]]
    {
        guard !owners.isEmpty else { return [:] }
        let targetRoot = schema[relationship.destination]?.root ?? relationship.destination
        let target = layout.qualified(targetRoot)
        let sql: String
        switch relationship.storage {
        case .inverseForeignKey(_, let name):
            sql = """
                SELECT h.\(PostgresSQL.quote(name)), h."_pk", h."_entity" FROM \(target) AS h \
                WHERE h.\(PostgresSQL.quote(name)) = ANY($1) ORDER BY h."_pk"
                """
        case .joinTable(let join, let isOwner):
            let (mine, theirs) = isOwner ? ("source", "target") : ("target", "source")
            sql = """
                SELECT j."\(mine)", j."\(theirs)", o."_entity" FROM \(layout.qualified(join.name)) AS j \
                JOIN \(target) AS o ON o."_pk" = j."\(theirs)" WHERE j."\(mine)" = ANY($1) ORDER BY j."\(theirs)"
                """
        case .foreignKey:
            return [:]
        }
        var related: [Int64: [PersistentIdentifier]] = [:]
        for row in try session.query(sql, keys: owners) {
            let cells = Array(row)
            guard let owner = try PostgresValues.int(cells[0]), let key = try PostgresValues.int(cells[1]) else {
                continue
            }
            let entity = try PostgresValues.text(cells[2]) ?? relationship.destination
            related[owner, default: []].append(
                PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key)))
        }
        return related
    }
}
