import ModelCore
import ModelStorage
import PostgresNIO

extension PostgresObjects {
    /// Objects from rows selected as `_pk`, `_entity`, `_version`, then `columns` (a foreign
    /// key's column followed by its target's `_entity`), with `properties` only (nil: all).
    /// Which columns an entity's objects take is worked out once per entity
    /// (``ColumnReads``), not at every row; `known` are those worked out already, by entity.
    func decode(
        _ rows: [PostgresRow], columns: [SelectedColumn], properties: Set<String>?,
        known: [String: ColumnReads] = [:]
    ) throws -> [ObjectSnapshot] {
        var snapshots: [ObjectSnapshot] = []
        snapshots.reserveCapacity(rows.count)
        var reads = known
        var last: ColumnReads?
        for row in rows {
            var cells = row.makeIterator()
            guard let keyCell = cells.next(), let entityCell = cells.next(), let versionCell = cells.next(),
                let key = try PostgresValues.int(keyCell), let entityName = try PostgresValues.text(entityCell),
                let version = try PostgresValues.int(versionCell)
            else { continue }
            let entity: ColumnReads
            if let last, last.entity.name == entityName {
                entity = last
            } else if let known = reads[entityName] {
                entity = known
            } else if let resolved = schema[entityName] {
                entity = ColumnReads(resolved, columns: columns, properties: properties, schema: schema)
                reads[entityName] = entity
            } else {
                continue
            }
            last = entity
            var attributes = [String: Value](minimumCapacity: entity.attributeCount)
            var relationships = [String: RelationshipValue](minimumCapacity: entity.relationshipCount)
            for read in entity.reads {
                switch read {
                case .attribute(let name, let type):
                    guard let cell = cells.next() else { break }
                    attributes[name] = try PostgresValues.value(cell, as: type)
                case .reference(let name, let root, let destination):
                    guard let keyCell = cells.next(), let targetCell = cells.next() else { break }
                    if let target = try PostgresValues.int(keyCell) {
                        let targetEntity = try PostgresValues.text(targetCell) ?? destination
                        relationships[name] = .toOne(identifier(root: root, entity: targetEntity, key: target))
                    } else {
                        relationships[name] = .toOne(nil)
                    }
                case .skip(let width):
                    for _ in 0..<width { _ = cells.next() }
                }
            }
            snapshots.append(
                ObjectSnapshot(
                    id: identifier(root: entity.entity.root, entity: entityName, key: key),
                    version: version, attributes: attributes, relationships: relationships))
        }
        return snapshots
    }
}

/// How the selected columns of a row become one entity's object: each column is an attribute
/// of it, a to-one relationship of it (the key and the target's `_entity`), or skipped (a
/// column of another entity of the hierarchy, or one not asked for).
struct ColumnReads {
    enum Read {
        case attribute(String, AttributeType)
        case reference(String, root: String, destination: String)
        case skip(width: Int)
    }

    let entity: ResolvedEntity
    let reads: [Read]
    let attributeCount: Int
    let relationshipCount: Int

    init(_ entity: ResolvedEntity, columns: [SelectedColumn], properties: Set<String>?, schema: ResolvedSchema) {
        self.entity = entity
        var reads: [Read] = []
        var attributes = 0, relationships = 0
        for column in columns {
            let wanted = properties?.contains(column.name) ?? true
            switch column.kind {
            case .attribute(let type):
                if wanted, entity.attribute(column.name) != nil {
                    reads.append(.attribute(column.name, type))
                    attributes += 1
                } else {
                    reads.append(.skip(width: 1))
                }
            case .reference:
                if wanted, let relationship = entity.relationship(column.name) {
                    let root = schema[relationship.destination]?.root ?? relationship.destination
                    reads.append(.reference(column.name, root: root, destination: relationship.destination))
                    relationships += 1
                } else {
                    reads.append(.skip(width: 2))
                }
            }
        }
        self.reads = reads
        attributeCount = attributes
        relationshipCount = relationships
    }
}
