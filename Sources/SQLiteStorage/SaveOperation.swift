import Foundation
import ModelCore

/// One save, run on the writer connection inside one `BEGIN IMMEDIATE` transaction, following
/// the numbered steps of the semantics page: expected versions, existence and relationship
/// targets, unique constraints (error or upsert), key allocation and remapping, writes, versions,
/// history. Used on the writer's queue only.
final class SaveOperation {
    /// An object of the store: its hierarchy and key.
    struct ObjectRef: Hashable {
        let root: String
        let key: Int64
    }

    /// What the store holds for an object the change set updates, deletes or points to.
    struct StoredRow {
        let entity: String
        let version: Int64
    }

    /// Where an upserted insert goes.
    enum UpsertTarget {
        case stored(ObjectRef, entity: String)
        case insert(Int)
    }

    let connection: SQLiteConnection
    let layout: SQLiteLayout
    let storeIdentifier: UUID
    let changes: ChangeSet
    let plan: ChangeSetPlan
    var schema: ResolvedSchema { layout.schema }

    /// Stored rows of every object the change set names, by hierarchy and key.
    var stored: [ObjectRef: StoredRow] = [:]
    /// Insert values as they will be written (an upsert into an earlier insert merges here).
    var insertValues: [[String: Value]]
    var insertLinks: [[ChangeSetPlan.Links]]
    /// Inserts that became updates, by insert index.
    var upserts: [Int: UpsertTarget] = [:]
    /// The key each temporary identifier gets (allocated, or its upsert target's).
    var temporaryKeys: [UUID: Int64] = [:]
    /// Saved objects this save deletes.
    var deleted = Set<ObjectRef>()
    /// The history tombstone of each deleted object, in change-set order.
    var tombstones: [(id: PersistentIdentifier, values: [String: Value])] = []
    var result = SaveResult()

    init(_ changes: ChangeSet, plan: ChangeSetPlan, layout: SQLiteLayout, storeIdentifier: UUID, connection: SQLiteConnection) {
        self.changes = changes
        self.plan = plan
        self.layout = layout
        self.storeIdentifier = storeIdentifier
        self.connection = connection
        self.insertValues = plan.inserts.map(\.values)
        self.insertLinks = plan.inserts.map { [$0.links] }
    }

    /// Runs every step; throws (and the caller's transaction rolls back) on the first failure.
    func run() throws -> SaveResult {
        try loadStoredRows()
        try checkExpectedVersions()
        try checkExistence()
        try checkUniqueness()
        try allocateKeys()
        try write()
        try recordHistory()
        return result
    }

    /// The object `id` names in the store, if it exists as that entity (or a subentity).
    func existing(_ id: PersistentIdentifier) -> (ref: ObjectRef, row: StoredRow)? {
        guard let key = id.primaryKey, let root = schema[id.entityName]?.root else { return nil }
        let ref = ObjectRef(root: root, key: key)
        guard let row = stored[ref], schema[row.entity]?.isKind(of: id.entityName) ?? false else { return nil }
        return (ref, row)
    }

    /// Reads `_entity` and `_version` of every permanent object the change set updates, deletes
    /// or links to, one query per hierarchy.
    private func loadStoredRows() throws {
        var keys: [String: Set<Int64>] = [:]
        func note(_ id: PersistentIdentifier) {
            if let key = id.primaryKey, let root = schema[id.entityName]?.root { keys[root, default: []].insert(key) }
        }
        plan.updates.forEach { note($0.id) }
        plan.deletes.forEach { note($0.id) }
        for links in plan.inserts.map(\.links) + plan.updates.map(\.links) { links.targets.forEach { note($0.target) } }
        for (root, rootKeys) in keys {
            let table = layout.table(root: root)
            try connection.query("SELECT \"_pk\", \"_entity\", \"_version\" FROM \(table.quoted) WHERE \"_pk\" IN (SELECT value FROM json_each(?1))",
                                 [ReadContext.keyList(rootKeys)]) { row in
                stored[ObjectRef(root: root, key: row.int64(0))] = StoredRow(entity: row.text(1), version: row.int64(2))
            }
        }
    }

    /// The stored key an identifier refers to after this save: a permanent key, or the key a
    /// temporary identifier of this change set gets.
    func key(of id: PersistentIdentifier) -> Int64? {
        switch id.key {
        case .permanent(let key): key
        case .temporary(let uuid): temporaryKeys[uuid]
        }
    }
}
