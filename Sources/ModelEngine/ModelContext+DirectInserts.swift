import ModelCore

extension ModelContext {
    /// Saves `edits` as one change set made straight from them, when they are inserts alone
    /// (no relationships) into a context made for one save with nothing pending: what the
    /// daemon's `Apply` does with a bulk load. Returns nil, having done nothing, for any other
    /// edits or context; the caller then records the edits as pending changes and saves them.
    ///
    /// The result, and every error, is what recording and saving would give: the same checks in
    /// the same order (each edit's, located, before validation), the same values (defaults for
    /// what is not given), the same change set. Recording costs four hash-table entries and a
    /// working view per object, and saving reads them back twice; for 100,000 inserts that was
    /// about a third of the daemon's time.
    func saveInsertsDirectly(_ edits: [ObjectEdit]) async throws -> SaveResult? {
        guard !retainsSavedObjects, !pending.hasChanges, Self.areDirectInserts(edits) else { return nil }
        var changes = ChangeSet(author: author, uniquenessPolicy: uniquenessPolicy)
        changes.inserts.reserveCapacity(edits.count)
        var given = Set<PersistentIdentifier>()
        // Inserts come in runs of one entity: its lookup is kept for the next insert.
        var last: ResolvedEntity?
        for (index, edit) in edits.enumerated() {
            guard case .insert(let entityName, let attributes, _, let id) = edit else { return nil }
            do throws(ModelError) {
                let entity: ResolvedEntity
                if let last, last.name == entityName { entity = last } else { entity = try insertableEntity(entityName) }
                last = entity
                let values = try insertedValues(attributes, for: entity)
                let identifier: PersistentIdentifier
                if let id {
                    identifier = try checkNewIdentifier(id, entity: entityName)
                    guard given.insert(id).inserted else { throw Self.alreadyNamed(id) }
                } else {
                    identifier = .temporary(storeIdentifier: container.storeIdentifier, entityName: entityName)
                }
                changes.inserts.append(InsertedObject(id: identifier, attributes: values, relationships: [:]))
            } catch {
                throw error.locating(change: index, of: edits.count)
            }
        }
        var problems: [String] = []
        for insert in changes.inserts {
            guard let entity = schema[insert.id.entityName] else { continue }
            PendingChanges.appendProblems(of: insert.id, entity: entity, attributes: insert.attributes, to: &problems) { _ in 0 }
        }
        try PendingChanges.refuse(problems)
        let result: SaveResult
        do {
            result = try await backend.save(changes)
        } catch is SaveConflicts {
            // Inserts alone conflict with no version read; should a store say otherwise, the
            // general path resolves it.
            return nil
        }
        pending = PendingChanges(schema: schema)
        return result
    }

    /// Whether every edit is an insert without relationships.
    private static func areDirectInserts(_ edits: [ObjectEdit]) -> Bool {
        edits.allSatisfy { edit in
            if case .insert(_, _, let relationships, _) = edit { relationships.isEmpty } else { false }
        }
    }
}
