import Foundation
import ModelCore

/// One save, run on the writer connection inside one `BEGIN IMMEDIATE` transaction, following
/// the numbered steps of docs/storage-semantics.md: expected versions, values and relationship
/// targets, unique constraints (error or upsert), key allocation and remapping, writes, versions,
/// history. Any failure throws before the transaction commits, so nothing is written.
struct SaveOperation {
    let connection: SQLiteConnection
    let layout: SQLiteLayout
    let storeIdentifier: UUID
    let changes: ChangeSet

    var schema: ResolvedSchema { layout.schema }

    /// Runs every step (identifiers were checked before the save reached the writer).
    func run() throws -> SaveResult {
        var stored = try StoredRows(for: changes, layout: layout, connection: connection)
        try checkExpectedVersions(stored)
        let plan = try ChangeSetPlan(changes, schema: schema, stored: stored, isOverlay: false)
        guard !plan.inserts.isEmpty || !plan.updates.isEmpty || !plan.deletes.isEmpty else { return SaveResult() }
        var resolver = UniquenessResolver(operation: self, plan: plan)
        let merges = try resolver.resolve(policy: changes.uniquenessPolicy)
        let upserted = merges.values.compactMap { if case .stored(let ref) = $0 { ref } else { nil } }
        try stored.load(upserted, layout: layout, connection: connection)
        return try write(plan, merges: merges, stored: stored)
    }

    /// Step 1: every update or delete with an expected version whose object's stored version
    /// differs, or whose object is gone, is a conflict; any conflict fails the save with
    /// ``SaveConflicts`` carrying each object's current snapshot.
    private func checkExpectedVersions(_ stored: StoredRows) throws {
        let expectations = changes.updates.map { ($0.id, $0.expectedVersion) } + changes.deletes.map { ($0.id, $0.expectedVersion) }
        var seen = Set<PersistentIdentifier>()
        var conflicts: [(id: PersistentIdentifier, expected: Int64, ref: ObjectRef?)] = []
        for case let (id, expected?) in expectations where seen.insert(id).inserted {
            let found = stored.existing(id)
            guard found?.row.version != expected else { continue }
            conflicts.append((id, expected, found?.ref))
        }
        guard !conflicts.isEmpty else { return }
        var keys: [String: Set<Int64>] = [:]
        for conflict in conflicts { if let ref = conflict.ref { keys[ref.root, default: []].insert(ref.key) } }
        let current = try ReadContext(connection: connection, layout: layout, storeIdentifier: storeIdentifier, overlay: Overlay())
            .objectsByRoot(keys)
        throw SaveConflicts(conflicts.map { conflict in
            SaveConflicts.Conflict(id: conflict.id, expectedVersion: conflict.expected,
                                   current: conflict.ref.flatMap { current[$0.root]?[$0.key] })
        })
    }

    /// The permanent identifier of the object `key` of `entity`.
    func permanent(_ entity: String, _ key: Int64) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }
}
