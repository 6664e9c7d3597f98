import ModelCore
import ModelStorage

extension ModelContext {
    /// Saves every pending change atomically, as one history transaction: delete rules run
    /// (cascade, nullify, deny), then validation, then the store checks uniqueness and the
    /// versions this context read; conflicts are resolved by the ``mergePolicy``. All or nothing:
    /// if the save fails, nothing is written and the pending changes stay as they were.
    /// Returns the temporary → permanent identifier remap and the history token.
    @discardableResult
    public func save() async throws -> SaveResult {
        try await serialized { try await performSave() }
    }

    /// Makes `edits` (as ``apply(_:)`` does) and saves, as one operation: a client that keeps its
    /// own unit of work sends its changes and saves in one call. All or nothing: if an edit or the
    /// save fails, the context is left as it was before the call.
    @discardableResult
    public func save(applying edits: [ObjectEdit]) async throws -> SaveResult {
        try await serialized {
            guard !edits.isEmpty else { return try await performSave() }
            if let result = try await saveInsertsDirectly(edits) { return result }
            let before = pending
            do {
                try await performEdits(edits)
                return try await performSave()
            } catch {
                restorePending(before)
                throw error
            }
        }
    }

    private func performSave() async throws -> SaveResult {
        for _ in 0..<Self.maximumSaveAttempts {
            guard pending.hasChanges else { return SaveResult() }
            var working = pending
            try await propagateDeletes(&working, enforceDeny: true)
            let changes = working.makeChangeSet(author: author, uniquenessPolicy: uniquenessPolicy)
            try working.validate(changes)
            guard !changes.isEmpty else {
                discardPending()
                return SaveResult()
            }
            do {
                let result = try await backend.save(changes)
                finishSave(working, changes, result)
                return result
            } catch let conflicts as SaveConflicts {
                try resolve(conflicts)
            }
        }
        throw ModelError(
            .conflict,
            "the save kept conflicting with other saves after \(Self.maximumSaveAttempts) attempts; try again")
    }

    /// Runs delete rules on a copy of the pending changes: cascades delete related objects,
    /// nullify removes the deleted objects from their inverses, deny refuses (when enforced) while
    /// a related object survives.
    func propagateDeletes(_ working: inout PendingChanges, enforceDeny: Bool) async throws {
        var denied: [(PersistentIdentifier, ResolvedRelationship, [PersistentIdentifier])] = []
        var index = 0
        while index < working.deleted.count {
            let id = working.deleted[index]
            index += 1
            try await loadInto(&working, [id])
            guard let state = working.view(of: id), let entity = working.entity(of: id) else { continue }
            for relationship in entity.relationships {
                let targets = ObjectState.keyOrder(state.targets(of: relationship))
                guard !targets.isEmpty else { continue }
                switch relationship.deleteRule {
                case .cascade:
                    for target in targets { working.recordCascadeDelete(target) }
                case .nullify:
                    guard relationship.inverse != nil else { continue }
                    try await loadInto(&working, targets)
                    for target in targets where !working.deletedSet.contains(target) {
                        working.unlink(relationship, id, target, direct: false)
                    }
                case .deny:
                    denied.append((id, relationship, targets))
                case .noAction:
                    continue
                }
            }
        }
        guard enforceDeny else { return }
        for (id, relationship, targets) in denied {
            let blocking = targets.filter { !working.deletedSet.contains($0) }
            guard !blocking.isEmpty else { continue }
            let shown = blocking.prefix(5).map(\.uriRepresentation).joined(separator: ", ")
            throw ModelError(
                .deleteDenied,
                "cannot delete \(id): its '\(relationship.name)' relationship has the deny rule and still holds \(blocking.count) object(s): \(shown); delete or reassign them first",
                context: ["uri": id.uriRepresentation, "relationship": relationship.name])
        }
    }

    /// Loads objects the working copy does not know into it (and into the context's bases).
    private func loadInto(_ working: inout PendingChanges, _ ids: [PersistentIdentifier]) async throws {
        let unknown = ids.filter { !$0.isTemporary && !working.isKnown($0) }
        guard !unknown.isEmpty else { return }
        let snapshots = try await backend.snapshots(for: unknown)
        for snapshot in snapshots {
            working.bases[snapshot.id] = snapshot
            if !pending.isTouched(snapshot.id) { pending.bases[snapshot.id] = snapshot }
        }
    }

    /// After a successful save: the saved state becomes the new base of every object it wrote,
    /// under permanent identifiers and new versions, and nothing is pending.
    private func finishSave(_ working: PendingChanges, _ changes: ChangeSet, _ result: SaveResult) {
        guard retainsSavedObjects else {
            pending = PendingChanges(schema: schema)
            return
        }
        func permanent(_ id: PersistentIdentifier) -> PersistentIdentifier { result.remappedIdentifiers[id] ?? id }
        var bases = pending.bases
        for deleted in changes.deletes { bases[deleted.id] = nil }
        let written = changes.inserts.map(\.id) + changes.updates.map(\.id)
        for id in written {
            let saved = permanent(id)
            guard let version = result.versions[saved], let entity = working.entity(of: id),
                var state = working.view(of: id)
            else { continue }
            if id.isTemporary, version != 1 {
                // An upsert: the existing object holds values this context never read.
                bases[saved] = nil
                continue
            }
            state.id = saved
            state.toOne = state.toOne.mapValues { $0.map(permanent) }
            state.toMany = state.toMany.mapValues { Set($0.map(permanent)) }
            bases[saved] = state.snapshot(version: version, entity: entity)
        }
        pending = PendingChanges(schema: schema)
        pending.bases = bases
    }

    /// Resolves conflicts with the merge policy, adjusting the pending changes for another
    /// attempt, or throws `conflict` naming the objects.
    private func resolve(_ conflicts: SaveConflicts) throws(ModelError) {
        func failure(_ list: [SaveConflicts.Conflict], _ why: String) -> ModelError {
            let shown = list.prefix(5).map { c in
                c.current.map { "\(c.id) (read version \(c.expectedVersion), now \($0.version))" }
                    ?? "\(c.id) (deleted)"
            }.joined(separator: ", ")
            return ModelError(
                .conflict, "\(why): \(shown); fetch them again and retry, or save with another merge policy",
                context: ["objects": list.map(\.id.uriRepresentation).joined(separator: " ")])
        }
        if mergePolicy == .error {
            throw failure(
                conflicts.conflicts, "the save conflicts with changes saved since this context read the objects")
        }
        for conflict in conflicts.conflicts {
            let id = conflict.id
            guard let current = conflict.current else {
                // Deleted by another save. A delete of ours has nothing left to do; other changes
                // are lost unless the policy says ours don't matter.
                let ours = pending.deletedSet.contains(id)
                guard ours || mergePolicy == .storeTrump || mergePolicy == .rollback else {
                    throw failure([conflict], "objects changed by this context were deleted by another save")
                }
                pending.discardChanges(to: id)
                pending.bases[id] = nil
                pending.expectedVersions[id] = nil
                continue
            }
            let old = pending.bases[id]
            switch mergePolicy {
            case .error:
                break
            case .objectTrump:
                break
            case .overwrite:
                if let view = pending.view(of: id), !pending.deletedSet.contains(id) {
                    pending.attributeEdits[id] = view.attributes
                }
            case .storeTrump:
                let changed = Self.changedProperties(from: old, to: current)
                pending.attributeEdits[id] = pending.attributeEdits[id]?.filter { !changed.contains($0.key) }
                if pending.attributeEdits[id]?.isEmpty == true { pending.attributeEdits[id] = nil }
                pending.links.removeAll { $0.source == id && changed.contains($0.relationship) }
                if pending.deletedSet.remove(id) != nil { pending.deleted.removeAll { $0 == id } }
            case .rollback:
                pending.discardChanges(to: id)
            }
            pending.bases[id] = current
            pending.expectedVersions[id] = nil
        }
        pending.rebuildViews()
    }

    /// The names of the properties whose values differ between two snapshots of one object.
    static func changedProperties(from old: ObjectSnapshot?, to new: ObjectSnapshot) -> Set<String> {
        guard let old else { return Set(new.attributes.keys).union(new.relationships.keys) }
        var names = Set<String>()
        for (name, value) in new.attributes where old.attributes[name] != value { names.insert(name) }
        for (name, value) in new.relationships where old.relationships[name] != value { names.insert(name) }
        return names
    }
}
