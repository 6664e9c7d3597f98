import ModelCore

extension ModelContainer {
    /// Saves `edits` as one change set made straight from them, when they are inserts alone
    /// (no relationships): what a context made for one save does with them
    /// (``ModelContext/save(applying:)``), without making the context. The daemon's `Apply`
    /// takes this way, so a save of inserts hops onto no actor. Returns nil, having done nothing,
    /// for no edits or any other edits; the caller then saves them through a context.
    ///
    /// The result, and every error, is what recording and saving would give: the same checks in
    /// the same order (each edit's, located, before validation), the same values (defaults for
    /// what is not given), the same change set. Recording costs four hash-table entries and a
    /// working view per object, and saving reads them back twice; for 100,000 inserts that was
    /// about a third of the daemon's time.
    public nonisolated(nonsending) func saveInserts(
        _ edits: [ObjectEdit], author: String?,
        uniquenessPolicy: UniquenessPolicy
    ) async throws -> SaveResult? {
        guard let changes = try insertChangeSet(edits, author: author, uniquenessPolicy: uniquenessPolicy) else {
            return nil
        }
        do {
            return try await backend.save(changes)
        } catch is SaveConflicts {
            // Inserts alone conflict with no version read; should a store say otherwise, the
            // general way resolves it.
            return nil
        }
    }

    /// The change set of `edits` if they are inserts without relationships, checked and
    /// validated; nil for none, or for any other edits.
    private func insertChangeSet(_ edits: [ObjectEdit], author: String?, uniquenessPolicy: UniquenessPolicy)
        throws(ModelError) -> ChangeSet?
    {
        guard !edits.isEmpty, Self.areDirectInserts(edits) else { return nil }
        var changes = ChangeSet(author: author, uniquenessPolicy: uniquenessPolicy)
        changes.inserts.reserveCapacity(edits.count)
        var given = Set<PersistentIdentifier>()
        // Inserts come in runs of one entity: its lookup is kept for the next insert.
        var last: ResolvedEntity?
        for (index, edit) in edits.enumerated() {
            guard case .insert(let entityName, let attributes, _, let id) = edit else { return nil }
            do throws(ModelError) {
                let entity: ResolvedEntity
                if let last, last.name == entityName {
                    entity = last
                } else {
                    entity = try insertableEntity(entityName)
                }
                last = entity
                let values = try insertedValues(attributes, for: entity)
                let identifier: PersistentIdentifier
                if let id {
                    identifier = try checkNewIdentifier(id, entity: entityName)
                    guard given.insert(id).inserted else { throw ModelContext.alreadyNamed(id) }
                } else {
                    identifier = .temporary(storeIdentifier: storeIdentifier, entityName: entityName)
                }
                changes.inserts.append(InsertedObject(id: identifier, attributes: values, relationships: [:]))
            } catch {
                throw error.locating(change: index, of: edits.count)
            }
        }
        var problems: [String] = []
        for insert in changes.inserts {
            guard let entity = schema[insert.id.entityName] else { continue }
            PendingChanges.appendProblems(of: insert.id, entity: entity, attributes: insert.attributes, to: &problems) {
                _ in 0
            }
        }
        try PendingChanges.refuse(problems)
        return changes
    }

    /// Whether every edit is an insert without relationships.
    private static func areDirectInserts(_ edits: [ObjectEdit]) -> Bool {
        edits.allSatisfy { edit in
            if case .insert(_, _, let relationships, _) = edit { relationships.isEmpty } else { false }
        }
    }

    /// The entity called `entityName`, if objects of it can be inserted (it is not abstract).
    func insertableEntity(_ entityName: String) throws(ModelError) -> ResolvedEntity {
        let entity = try schema.entity(entityName)
        guard !entity.isAbstract else {
            throw ModelError(
                .invalidArgument,
                "entity '\(entityName)' is abstract: insert one of its subentities (\(entity.descendants.dropFirst().joined(separator: ", ")))",
                context: ["entity": entityName])
        }
        return entity
    }

    /// Checks an identifier a caller chose for a new object: temporary, of this store and of the
    /// inserted entity.
    func checkNewIdentifier(_ id: PersistentIdentifier, entity: String) throws(ModelError) -> PersistentIdentifier {
        guard id.isTemporary, id.storeIdentifier == storeIdentifier, id.entityName == entity else {
            throw ModelError(
                .invalidIdentifier,
                "\(id) cannot name a new \(entity): give a temporary URI of this store and entity, modeld://\(storeIdentifier.uuidString.lowercased())/\(entity)/t<uuid>",
                context: ["uri": id.uriRepresentation])
        }
        return id
    }

    /// A new object's attribute values: `attributes` converted (``convert(_:for:)``), and each
    /// attribute not given set to its default, or null.
    func insertedValues(_ attributes: [String: Value], for entity: ResolvedEntity) throws(ModelError) -> [String: Value]
    {
        var values = try convert(attributes, for: entity)
        // Converted values are the entity's attributes only: as many means all of them.
        guard values.count != entity.attributes.count else { return values }
        for attribute in entity.attributes where values[attribute.name] == nil {
            values[attribute.name] = attribute.defaultValue ?? .null
        }
        return values
    }

    /// Converts attribute values to their declared types, rejecting unknown names, values that
    /// cannot convert (an invalid JSON text for a json attribute, say) and values the store cannot
    /// keep (``StorageValueChecking``), so that they are refused when staged, not at the save.
    func convert(_ attributes: [String: Value], for entity: ResolvedEntity) throws(ModelError) -> [String: Value] {
        // Values already of their attribute's type (the usual case) leave the table as it is.
        var values = attributes
        for (name, value) in attributes {
            guard let attribute = entity.attribute(name) else {
                if entity.relationship(name) != nil {
                    throw ModelError(
                        .invalidArgument,
                        "'\(entity.name).\(name)' is a relationship: pass it as a relationship value, not an attribute",
                        context: ["entity": entity.name, "property": name])
                }
                throw ModelError.unknownProperty(name, entity: entity.name)
            }
            do {
                let converted = try value.converted(to: attribute.type)
                if case .json(let text) = converted, Value(parsing: text, as: .json) == nil {
                    throw ModelError(.typeMismatch, "not valid JSON")
                }
                if converted.isChanged(from: value) { values[name] = converted }
            } catch {
                throw ModelError(
                    .typeMismatch,
                    "'\(entity.name).\(name)' is \(attribute.type.rawValue), and \(value.debugText) cannot be one: \((error as? ModelError)?.message ?? "\(error)")",
                    context: ["entity": entity.name, "attribute": name, "expected": attribute.type.rawValue])
            }
            if let valueChecker {
                try valueChecker.checkStorable(values[name] ?? value, entity: entity.name, attribute: name)
            }
        }
        return values
    }
}
