import Foundation
import ModelCore
import ModelStorage

/// One save, run on the writer connection inside one `BEGIN IMMEDIATE` transaction: the steps of
/// docs/storage-semantics.md come from ModelStorage's one save algorithm (expected versions,
/// ``ChangeSetPlan``, ``UniquenessResolver``, ``SaveWrites``) reading through ``StoredRows``;
/// this writes what it computed, as SQL, and the history transaction. Any failure throws before
/// the transaction commits, so nothing is written.
struct SaveOperation {
    let connection: SQLiteConnection
    let layout: SQLiteLayout
    let storeIdentifier: UUID
    let changes: ChangeSet

    var schema: ResolvedSchema { layout.schema }

    /// Runs every step (identifiers were checked before the save reached the writer).
    func run() throws -> SaveResult {
        try Self.checkSchemaVersion(schema, connection)
        let reads = try StoredRows(
            for: changes, layout: layout, connection: connection, storeIdentifier: storeIdentifier)
        try checkExpectedVersions(reads)
        let plan = try ChangeSetPlan(changes, reads: reads, isOverlay: false)
        guard !plan.isEmpty else { return SaveResult() }
        var resolver = UniquenessResolver(reads: reads, plan: plan)
        let merges = try resolver.resolve(policy: changes.uniquenessPolicy)
        let writes = try SaveWrites(plan, merges: merges, reads: reads)
        for (root, key) in writes.lastKeys { try StoreMetadata.setSequence(root, to: key, connection) }
        try apply(writes)
        var result = writes.result
        result.token = try recordHistory(writes.history)
        return result
    }

    /// Step 0: the store still has the schema this save was made for. Another process (an
    /// embedded stack, a daemon) may have migrated the file since this one read it: a save of
    /// the old shape is refused rather than written into the new tables.
    static func checkSchemaVersion(_ schema: ResolvedSchema, _ connection: SQLiteConnection) throws {
        if connection.groupMemo?.checkedSchema == schema.versionHash { return }
        guard let stored = try StoreMetadata.value(for: "schemaHash", connection), stored != schema.versionHash else {
            connection.groupMemo?.checkedSchema = schema.versionHash
            return
        }
        throw ModelError(
            .schemaMismatch,
            "the store was migrated to schema version \(stored.prefix(12)) after this process read its schema (version \(schema.versionHash.prefix(12))); nothing was saved: open the store again with the new schema",
            context: ["storeVersion": stored, "requestedVersion": schema.versionHash, "staleSchema": "true"])
    }

    /// Step 1: conflicts fail the save with ``SaveConflicts`` carrying each object's current
    /// snapshot.
    private func checkExpectedVersions(_ reads: StoredRows) throws {
        let conflicts = try ExpectedVersions.conflicts(in: changes, reads: reads)
        guard !conflicts.isEmpty else { return }
        var keys: [String: Set<Int64>] = [:]
        for conflict in conflicts { if let ref = conflict.ref { keys[ref.root, default: []].insert(ref.key) } }
        let current = try ReadContext(
            connection: connection, layout: layout, storeIdentifier: storeIdentifier, overlay: Overlay()
        )
        .objectsByRoot(keys)
        throw SaveConflicts(
            conflicts.map { conflict in
                SaveConflicts.Conflict(
                    id: conflict.id, expectedVersion: conflict.expected,
                    current: conflict.ref.flatMap { current[$0.root]?[$0.key] })
            })
    }
}
