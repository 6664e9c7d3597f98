import Foundation
import ModelCore
import ModelStorage

/// What a save or an overlay reads of the stored objects (``SaveReads``), on the connection it
/// runs on (the store's own tables, never an overlay): the rows of every saved object a change
/// set updates, deletes or links to are read up front, with one query per hierarchy; the rest
/// (the objects inserts are upserted into, unique keys, tombstones) as the save asks.
struct StoredRows: SaveReads {
    let layout: SQLiteLayout
    let connection: SQLiteConnection
    let storeIdentifier: UUID
    private(set) var rows: [ObjectRef: StoredObject] = [:]

    var schema: ResolvedSchema { layout.schema }

    init(for changes: ChangeSet, layout: SQLiteLayout, connection: SQLiteConnection, storeIdentifier: UUID) throws {
        self.layout = layout
        self.connection = connection
        self.storeIdentifier = storeIdentifier
        for (root, rootKeys) in changes.savedKeysByRoot(in: layout.schema) {
            let table = layout.table(root: root)
            try connection.query(
                "SELECT \"_pk\", \"_entity\", \"_version\" FROM \(table.quoted) WHERE \"_pk\" IN (SELECT value FROM json_each(?1))",
                [ReadContext.keyList(rootKeys)]
            ) { row in
                rows[ObjectRef(root: root, key: row.int64(0))] = StoredObject(
                    entity: row.text(1), version: row.int64(2))
            }
        }
    }

    /// Objects read up front are answered from memory; others (the objects inserts are upserted
    /// into) by a query.
    func storedObject(_ ref: ObjectRef) throws -> StoredObject? {
        if let row = rows[ref] { return row }
        var found: StoredObject?
        try connection.query(
            "SELECT \"_entity\", \"_version\" FROM \(layout.table(root: ref.root).quoted) WHERE \"_pk\" = ?1",
            [.int(ref.key)]
        ) { row in
            found = StoredObject(entity: row.text(0), version: row.int64(1))
        }
        return found
    }

    /// Through the constraint's unique index.
    func objects(root: String, constraint attributes: [String], equalTo values: [Value]) throws -> [ObjectRef] {
        let table = layout.table(root: root)
        var conditions = attributes.enumerated().map { "\(SQL.quote($1)) = ?\($0 + 1)" }
        if let filter = SQLiteLayout.constraintScope(attributes, in: table, schema: schema) {
            conditions.append(filter)
        }
        var refs: [ObjectRef] = []
        try connection.query(
            "SELECT \"_pk\" FROM \(table.quoted) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \"_pk\"",
            values
        ) {
            refs.append(ObjectRef(root: root, key: $0.int64(0)))
        }
        return refs
    }

    func values(of ref: ObjectRef, _ attributes: [AttributeDescription]) throws -> [String: Value] {
        var values: [String: Value] = [:]
        try connection.query(
            "SELECT \(attributes.map { SQL.quote($0.name) }.joined(separator: ", ")) FROM \(layout.table(root: ref.root).quoted) WHERE \"_pk\" = ?1",
            [.int(ref.key)]
        ) { row in
            for (index, attribute) in attributes.enumerated() {
                values[attribute.name] = try row.value(Int32(index), as: attribute.type)
            }
        }
        return values
    }

    func lastKey(of root: String) throws -> Int64 {
        try StoreMetadata.sequence(root, connection)
    }
}
