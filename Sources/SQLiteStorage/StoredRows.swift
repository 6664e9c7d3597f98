import ModelCore

/// An object of the store: its hierarchy (root entity) and key.
struct ObjectRef: Hashable {
    let root: String
    let key: Int64

    /// Hashes the key alone: a save's objects mostly share one hierarchy, so hashing the root's
    /// name too would cost more than the rare shared key between hierarchies.
    func hash(into hasher: inout Hasher) {
        hasher.combine(key)
    }
}

/// What the store holds of an object a change set names: its concrete entity and version.
struct StoredRow {
    let entity: String
    let version: Int64
}

/// The stored rows of every saved object a change set updates, deletes or links to, read with
/// one query per hierarchy.
struct StoredRows {
    let schema: ResolvedSchema
    private(set) var rows: [ObjectRef: StoredRow] = [:]

    /// Reads the rows `changes` names (updates, deletes, relationship targets) on `connection`
    /// (the store's own tables, never an overlay).
    init(for changes: ChangeSet, layout: SQLiteLayout, connection: SQLiteConnection) throws {
        schema = layout.schema
        var keys: [String: Set<Int64>] = [:]
        func note(_ id: PersistentIdentifier) {
            if let key = id.primaryKey, let root = layout.schema[id.entityName]?.root { keys[root, default: []].insert(key) }
        }
        changes.updates.forEach { note($0.id) }
        changes.deletes.forEach { note($0.id) }
        for relationships in changes.inserts.map(\.relationships) + changes.updates.map(\.relationships) {
            for change in relationships.values {
                switch change {
                case .toOne(let target): target.map(note)
                case .toMany(let added, _): added.forEach(note)
                }
            }
        }
        for (root, rootKeys) in keys { try load(root: root, keys: rootKeys, layout: layout, connection: connection) }
    }

    /// Reads the rows of more objects (the saved objects inserts are upserted into).
    mutating func load(_ refs: [ObjectRef], layout: SQLiteLayout, connection: SQLiteConnection) throws {
        let missing = Dictionary(grouping: refs.filter { rows[$0] == nil }, by: \.root)
        for (root, refs) in missing { try load(root: root, keys: refs.map(\.key), layout: layout, connection: connection) }
    }

    private mutating func load<C: Collection>(root: String, keys: C, layout: SQLiteLayout, connection: SQLiteConnection) throws
    where C.Element == Int64 {
        let table = layout.table(root: root)
        try connection.query("SELECT \"_pk\", \"_entity\", \"_version\" FROM \(table.quoted) WHERE \"_pk\" IN (SELECT value FROM json_each(?1))",
                             [ReadContext.keyList(keys)]) { row in
            rows[ObjectRef(root: root, key: row.int64(0))] = StoredRow(entity: row.text(1), version: row.int64(2))
        }
    }

    /// The object `id` names, if it is stored as that entity or a subentity.
    func existing(_ id: PersistentIdentifier) -> (ref: ObjectRef, row: StoredRow)? {
        guard let key = id.primaryKey, let root = schema[id.entityName]?.root else { return nil }
        let ref = ObjectRef(root: root, key: key)
        guard let row = rows[ref], schema[row.entity]?.isKind(of: id.entityName) ?? false else { return nil }
        return (ref, row)
    }
}
