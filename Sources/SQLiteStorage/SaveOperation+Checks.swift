import ModelCore

extension SaveOperation {
    /// Step 1: every update or delete with an expected version whose object's stored version
    /// differs, or whose object is gone, is a conflict; any conflict fails the save with
    /// ``SaveConflicts`` carrying each object's current snapshot.
    func checkExpectedVersions() throws {
        var conflicts: [(id: PersistentIdentifier, expected: Int64, ref: ObjectRef?)] = []
        let expectations = plan.updates.map { ($0.id, $0.expectedVersion) } + plan.deletes.map { ($0.id, $0.expectedVersion) }
        for (id, expectedVersion) in expectations {
            guard let expected = expectedVersion else { continue }
            guard let (ref, row) = existing(id) else {
                conflicts.append((id, expected, nil))
                continue
            }
            if row.version != expected { conflicts.append((id, expected, ref)) }
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

    /// Step 2: updated objects must exist (`notFound`); relationship targets must exist — saved,
    /// or inserted by this change set — (`notFound`) and be of the relationship's destination
    /// entity or a subentity (`typeMismatch`).
    func checkExistence() throws {
        for update in plan.updates where existing(update.id) == nil {
            throw ModelError(.notFound, "cannot update \(update.id): no such object in this store; it may have been deleted",
                             context: ["uri": update.id.uriRepresentation])
        }
        var inserted: [PersistentIdentifier: String] = [:]
        for insert in plan.inserts { inserted[insert.id] = insert.entity.name }
        let owners = plan.inserts.map { ($0.id, $0.links) } + plan.updates.map { ($0.id, $0.links) }
        for (owner, links) in owners {
            for (relationship, target) in links.targets {
                let entity: String
                if target.isTemporary {
                    guard let name = inserted[target] else { throw missingTarget(target, of: owner, relationship) }
                    entity = name
                } else {
                    guard let (_, row) = existing(target) else { throw missingTarget(target, of: owner, relationship) }
                    entity = row.entity
                }
                guard schema[entity]?.isKind(of: relationship.destination) ?? false else {
                    throw ModelError(.typeMismatch,
                                     "\(owner.entityName).\(relationship.name) holds \(relationship.destination) objects, and \(target) is a \(entity)",
                                     context: ["uri": target.uriRepresentation, "relationship": relationship.name, "expected": relationship.destination])
                }
            }
        }
    }

    private func missingTarget(_ target: PersistentIdentifier, of owner: PersistentIdentifier, _ relationship: ResolvedRelationship) -> ModelError {
        ModelError(.notFound, "\(owner).\(relationship.name) refers to \(target), which is not in this store (nor inserted by this save)",
                   context: ["uri": target.uriRepresentation, "relationship": relationship.name])
    }
}
