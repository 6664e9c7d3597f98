import ModelCore

extension SavePlanner {
    /// Steps 4 to 7: allocates keys, remaps temporary identifiers, builds the final rows and
    /// join-table changes (stored side only), versions, and the history changes.
    func build(_ inserts: [PlannedInsert], _ updates: [PlannedUpdate], _ deletes: [ObjectRef],
               _ merges: [Int: Participant]) -> WritePlan {
        var plan = WritePlan()
        plan.deletes = deletes
        let deleted = Set(deletes)

        // Keys, in change-set order, after every key allocated so far.
        var keys: [Int: ObjectRef] = [:]
        for (index, insert) in inserts.enumerated() where merges[index] == nil {
            let root = insert.entity.root
            let key = (plan.sequences[root] ?? state.sequences[root] ?? 0) + 1
            plan.sequences[root] = key
            keys[index] = ObjectRef(root: root, key: key)
        }
        func ref(_ participant: Participant) -> ObjectRef? {
            switch participant {
            case .stored(let ref): ref
            case .inserted(let index): merges[index].flatMap(ref) ?? keys[index]
            }
        }

        // Rows. Existing objects that change are listed in the order history records them:
        // upserted ones first (in insert order), then the updates.
        var rows: [ObjectRef: Row] = [:]
        var changedOrder: [ObjectRef] = []
        var changedProperties: [ObjectRef: Set<String>] = [:]
        func noteChange(_ ref: ObjectRef, _ properties: [String]) {
            if changedProperties[ref] == nil { changedOrder.append(ref) }
            changedProperties[ref, default: []].formUnion(properties)
        }
        for (index, insert) in inserts.enumerated() {
            guard let target = merges[index] else {
                if let ref = keys[index] {
                    rows[ref] = Row(entity: insert.entity.name, version: 1, attributes: insert.attributes, foreignKeys: [:])
                }
                continue
            }
            guard let ref = ref(target), var row = rows[ref] ?? state.row(ref) else { continue }
            for (name, value) in insert.given where state.schema[row.entity]?.attribute(name) != nil {
                row.attributes[name] = value.isNull ? nil : value
            }
            rows[ref] = row
            if case .stored = target { noteChange(ref, insert.changedProperties) }
        }
        for update in updates {
            guard var row = rows[update.ref] ?? state.row(update.ref) else { continue }
            for (name, value) in update.attributes { row.attributes[name] = value.isNull ? nil : value }
            rows[update.ref] = row
            noteChange(update.ref, update.changedProperties)
        }

        // Relationship changes, on the stored side only.
        func link(_ changes: [LinkChange], owner: ObjectRef) {
            for change in changes where change.relationship.isStoredHere {
                switch (change.relationship.storage, change.kind) {
                case (.foreignKey, .toOne(let target)):
                    rows[owner]?.foreignKeys[change.relationship.name] = target.flatMap(ref)?.key
                case (.joinTable(let table, _), .toMany(let added, let removed)):
                    for target in removed.compactMap(ref) {
                        plan.joinChanges.append((table.name, owner.key, target.key, false))
                    }
                    for target in added.compactMap(ref) {
                        plan.joinChanges.append((table.name, owner.key, target.key, true))
                    }
                default:
                    continue
                }
            }
        }
        for (index, insert) in inserts.enumerated() {
            if let owner = ref(.inserted(index)) { link(insert.links, owner: owner) }
        }
        for update in updates { link(update.links, owner: update.ref) }

        // Versions: every existing object that changes grows by exactly one.
        for ref in changedOrder {
            if let stored = state.row(ref) { rows[ref]?.version = stored.version + 1 }
        }
        plan.rows = rows

        func permanent(_ ref: ObjectRef) -> PersistentIdentifier {
            let entity = rows[ref]?.entity ?? state.row(ref)?.entity ?? ref.root
            return PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(ref.key))
        }
        for (index, insert) in inserts.enumerated() {
            guard let ref = ref(.inserted(index)) else { continue }
            plan.remap[insert.id] = permanent(ref)
            if merges[index] == nil { plan.insertedRefs[insert.id] = ref }
        }
        for (ref, row) in rows where !deleted.contains(ref) { plan.versions[permanent(ref)] = row.version }

        // History: inserts, then updates, then deletes, each in change-set order.
        for index in inserts.indices where merges[index] == nil {
            if let ref = keys[index] { plan.changes.append(HistoryChange(kind: .insert, id: permanent(ref))) }
        }
        for ref in changedOrder where !deleted.contains(ref) {
            let properties = (changedProperties[ref] ?? []).sorted()
            plan.changes.append(HistoryChange(kind: .update, id: permanent(ref), changedProperties: properties))
        }
        for ref in deletes {
            guard let row = state.row(ref), let entity = state.schema[row.entity] else { continue }
            var tombstone: [String: Value] = [:]
            for attribute in entity.preservedAttributes { tombstone[attribute.name] = row.value(attribute.name) }
            plan.changes.append(HistoryChange(kind: .delete, id: permanent(ref), tombstone: tombstone))
        }
        return plan
    }
}
