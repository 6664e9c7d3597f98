import ModelCore

extension PendingChanges {
    /// The change set that saves the pending changes: inserts with every value, updates with the
    /// changed values only (and the version read, for objects the client changed itself), deletes.
    /// References to objects that were inserted and deleted again are dropped.
    func makeChangeSet(author: String?, uniquenessPolicy: UniquenessPolicy) -> ChangeSet {
        let vanished = Set(inserted.filter { deletedSet.contains($0) })
        func alive(_ ids: Set<PersistentIdentifier>) -> [PersistentIdentifier] {
            ObjectState.keyOrder(ids.subtracting(vanished))
        }
        var changes = ChangeSet(author: author, uniquenessPolicy: uniquenessPolicy)
        changes.inserts.reserveCapacity(inserted.count)
        for id in inserted where !deletedSet.contains(id) {
            guard let state = view(of: id), let entity = entity(of: id) else { continue }
            var relationships: [String: RelationshipChange] = [:]
            for relationship in entity.relationships {
                if relationship.isToMany {
                    let targets = alive(state.toMany[relationship.name] ?? [])
                    if !targets.isEmpty { relationships[relationship.name] = .toMany(added: targets, removed: []) }
                } else if let target = state.toOne[relationship.name] ?? nil, !vanished.contains(target) {
                    relationships[relationship.name] = .toOne(target)
                }
            }
            changes.inserts.append(InsertedObject(id: id, attributes: state.attributes, relationships: relationships))
        }
        // The temporary identifiers a context touches are those of its own inserts.
        for id in touchOrder where !id.isTemporary && !deletedSet.contains(id) {
            guard let state = view(of: id), let base = bases[id], let entity = entity(of: id) else { continue }
            var update = UpdatedObject(id: id)
            let before = ObjectState(base)
            for (name, value) in attributeEdits[id] ?? [:] where base[name] != value {
                update.attributes[name] = value
            }
            for relationship in entity.relationships {
                if relationship.isToMany {
                    let now = Set(alive(state.toMany[relationship.name] ?? []))
                    let was = before.toMany[relationship.name] ?? []
                    let added = ObjectState.keyOrder(now.subtracting(was)),
                        removed = ObjectState.keyOrder(was.subtracting(now))
                    if !added.isEmpty || !removed.isEmpty {
                        update.relationships[relationship.name] = .toMany(added: added, removed: removed)
                    }
                } else {
                    var now = state.toOne[relationship.name] ?? nil
                    if let target = now, vanished.contains(target) { now = nil }
                    if now != (before.toOne[relationship.name] ?? nil) {
                        update.relationships[relationship.name] = .toOne(now)
                    }
                }
            }
            guard !update.attributes.isEmpty || !update.relationships.isEmpty else { continue }
            if directlyEdited.contains(id) {
                update.expectedVersion = expectedVersions[id] ?? base.version
            } else {
                update.keepsInversesOnly = true
            }
            changes.updates.append(update)
        }
        for id in deleted where !id.isTemporary {
            changes.deletes.append(
                DeletedObject(
                    id: id,
                    expectedVersion: directlyEdited.contains(id) ? expectedVersions[id] ?? bases[id]?.version : nil))
        }
        return changes
    }
}
