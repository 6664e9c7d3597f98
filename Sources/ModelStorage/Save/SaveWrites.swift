import Foundation
import ModelCore

/// Steps 4 to 7 of a save (docs/storage-semantics.md), computed before anything is written:
/// keys allocated (after each hierarchy's last key, in change-set order), temporary identifiers
/// remapped, the final values of new and changed objects (a merged insert's given values on
/// the object it merged into), relationship changes on their stored side, versions, and the
/// history transaction's changes. A backend writes them as they are; the same on every backend.
public struct SaveWrites: Sendable {
    /// A new object: its key, entity, and every attribute (nil as ``Value/null``) plus its
    /// to-one foreign keys (by relationship name: the target's key, or null).
    public struct Inserted: Sendable {
        public let ref: ObjectRef
        public let entity: String
        public var values: [String: Value]
    }

    /// A saved object that changes: the attribute values and foreign keys set (null clears).
    public struct Updated: Sendable {
        public let ref: ObjectRef
        public let entity: ResolvedEntity
        public var values: [String: Value]
    }

    /// One row of a join table to add (`present`) or remove.
    public struct Join: Sendable {
        public let table: String
        public let source: ObjectRef
        public let target: ObjectRef
        public let present: Bool
    }

    public var inserted: [Inserted] = []
    /// In the order history records them: objects inserts merged into, then updates.
    public var updated: [Updated] = []
    public var joins: [Join] = []
    /// Existing objects to delete, once each, with their entity.
    public var deletes: [(ref: ObjectRef, entity: String)] = []
    /// The new last key of every hierarchy that allocated keys.
    public var lastKeys: [String: Int64] = [:]
    /// The object each insert became (its new key, or the object it merged into), by index.
    public var insertRefs: [ObjectRef?] = []
    /// The inserts that merged into another object, by index.
    public var merges: [Int: SaveParticipant] = [:]
    /// The save's answer, without its token: the remap and the new versions.
    public var result = SaveResult()
    /// What the history transaction records: inserts, then updates (with the union of the names
    /// changed), then deletes with their tombstones, each in change-set order.
    public var history: [HistoryChange] = []

    /// Whether anything is written.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deletes.isEmpty && joins.isEmpty }
}

extension SaveWrites {
    /// Computes what `plan` writes, with `merges` (from ``UniquenessResolver``); `recordsHistory`
    /// false skips the tombstones and changes (an overlay).
    public init(
        _ plan: ChangeSetPlan, merges: [Int: SaveParticipant], reads: some SaveReads, recordsHistory: Bool = true
    ) throws {
        let schema = reads.schema
        self.merges = merges
        /// Where the `index`th insert merges (an upsert), if it does.
        func merged(_ index: Int) -> SaveParticipant? { merges.isEmpty ? nil : merges[index] }
        insertRefs = [ObjectRef?](repeating: nil, count: plan.inserts.count)
        // Inserts come in runs of one hierarchy: its last key is kept at hand for the next.
        var run: (root: String, key: Int64)?
        // Loops over the inserts go by index: a loop over the values would copy each one.
        for index in plan.inserts.indices where merged(index) == nil {
            let root = plan.inserts[index].entity.root
            let key: Int64
            if let run, run.root == root {
                key = run.key + 1
            } else {
                if let run { lastKeys[run.root] = run.key }
                key = try (lastKeys[root] ?? reads.lastKey(of: root)) + 1
            }
            run = (root, key)
            insertRefs[index] = ObjectRef(root: root, key: key)
        }
        if let run { lastKeys[run.root] = run.key }
        let keys = insertRefs
        func ref(_ participant: SaveParticipant) -> ObjectRef? {
            switch participant {
            case .stored(let ref): ref
            case .inserted(let index): merged(index).flatMap(ref) ?? keys[index]
            }
        }
        for index in plan.inserts.indices where merged(index) != nil { insertRefs[index] = ref(.inserted(index)) }

        inserted.reserveCapacity(plan.inserts.count)
        // Where each new row is among the inserted ones: for merges and links (a plain insert
        // is its own row, in order).
        let indexesInserts =
            !merges.isEmpty || plan.inserts.contains { !$0.links.isEmpty }
            || plan.updates.contains { !$0.links.isEmpty }
        var insertedIndex: [ObjectRef: Int] = [:], updatedIndex: [ObjectRef: Int] = [:]
        var changedProperties: [ObjectRef: Set<String>] = [:]
        var stored: [ObjectRef: StoredObject] = [:]
        if indexesInserts { insertedIndex.reserveCapacity(plan.inserts.count) }
        /// The updated row of `ref`, made (with its stored object read once) on first use; nil for
        /// an object no longer stored.
        func updatedRow(_ ref: ObjectRef) throws -> Int? {
            if let index = updatedIndex[ref] { return index }
            guard let object = try reads.storedObject(ref), let entity = schema[object.entity] else { return nil }
            stored[ref] = object
            updatedIndex[ref] = updated.count
            updated.append(Updated(ref: ref, entity: entity, values: [:]))
            return updated.count - 1
        }
        func update(_ ref: ObjectRef, _ values: [String: Value], _ properties: [String]) throws {
            guard let index = try updatedRow(ref) else { return }
            let entity = updated[index].entity
            for (name, value) in values where entity.attribute(name) != nil { updated[index].values[name] = value }
            changedProperties[ref, default: []].formUnion(properties)
        }
        for index in plan.inserts.indices {
            guard let target = merged(index) else {
                if let ref = keys[index] {
                    if indexesInserts { insertedIndex[ref] = inserted.count }
                    inserted.append(
                        Inserted(
                            ref: ref, entity: plan.inserts[index].entity.name, values: plan.inserts[index].attributes))
                }
                continue
            }
            let insert = plan.inserts[index]
            guard let ref = ref(target) else { continue }
            if let row = insertedIndex[ref] {
                let entity = schema[inserted[row].entity]
                for (name, value) in insert.given where entity?.attribute(name) != nil {
                    inserted[row].values[name] = value
                }
            } else if let row = try updatedRow(ref) {
                // History names the properties the upsert changed: a given value equal to the
                // stored one changed nothing.
                let current = try reads.values(
                    of: ref, insert.given.keys.compactMap { updated[row].entity.attribute($0) })
                let unchanged = insert.given.filter { name, value in
                    current[name].map { $0 == value && !value.isChanged(from: $0) } ?? false
                }
                try update(ref, insert.given, insert.changedProperties.filter { unchanged[$0] == nil })
            }
        }
        for change in plan.updates { try update(change.ref, change.attributes, change.changedProperties) }

        func link(_ links: [ChangeSetPlan.Link], owner: ObjectRef) {
            for link in links where link.relationship.isStoredHere {
                switch (link.relationship.storage, link.kind) {
                case (.foreignKey, .toOne(let target)):
                    let value = target.flatMap(ref).map { Value.int($0.key) } ?? .null
                    if let row = insertedIndex[owner] { inserted[row].values[link.relationship.name] = value }
                    if let row = updatedIndex[owner] { updated[row].values[link.relationship.name] = value }
                case (.joinTable(let table, _), .toMany(let added, let removed)):
                    for target in removed.compactMap(ref) {
                        joins.append(Join(table: table.name, source: owner, target: target, present: false))
                    }
                    for target in added.compactMap(ref) {
                        joins.append(Join(table: table.name, source: owner, target: target, present: true))
                    }
                default:
                    continue
                }
            }
        }
        for index in plan.inserts.indices where !plan.inserts[index].links.isEmpty {
            if let owner = ref(.inserted(index)) { link(plan.inserts[index].links, owner: owner) }
        }
        for change in plan.updates { link(change.links, owner: change.ref) }

        let deleted = Set(plan.deletes)
        for ref in plan.deletes {
            guard let object = try stored[ref] ?? reads.storedObject(ref) else { continue }
            stored[ref] = object
            deletes.append((ref, object.entity))
        }
        updated.removeAll { deleted.contains($0.ref) }

        result.remappedIdentifiers.reserveCapacity(plan.inserts.count)
        result.versions.reserveCapacity(inserted.count + updated.count)
        for index in plan.inserts.indices {
            guard let target = ref(.inserted(index)) else { continue }
            let insertedEntity = plan.inserts[index].entity.name
            // A new row is of the insert's entity; a merged insert is of the row it merged into.
            let entity =
                merged(index) == nil
                ? insertedEntity
                : insertedIndex[target].map { inserted[$0].entity } ?? stored[target]?.entity ?? insertedEntity
            result.remappedIdentifiers[plan.inserts[index].id] = reads.permanent(entity, target.key)
        }
        for row in inserted { result.versions[reads.permanent(row.entity, row.ref.key)] = 1 }
        for row in updated {
            if let version = stored[row.ref]?.version {
                result.versions[reads.permanent(row.entity.name, row.ref.key)] = version + 1
            }
        }
        guard recordsHistory else { return }
        history.reserveCapacity(inserted.count + updated.count + deletes.count)
        for row in inserted {
            history.append(HistoryChange(kind: .insert, id: reads.permanent(row.entity, row.ref.key)))
        }
        for row in updated {
            history.append(
                HistoryChange(
                    kind: .update, id: reads.permanent(row.entity.name, row.ref.key),
                    changedProperties: (changedProperties[row.ref] ?? []).sorted()))
        }
        for (ref, entityName) in deletes {
            let preserved = schema[entityName]?.preservedAttributes ?? []
            let tombstone = preserved.isEmpty ? [:] : try reads.values(of: ref, preserved)
            history.append(HistoryChange(kind: .delete, id: reads.permanent(entityName, ref.key), tombstone: tombstone))
        }
        var last: String?
        for change in history where change.id.entityName != last {
            last = change.id.entityName
            result.touchedEntities.insert(change.id.entityName)
        }
    }
}
