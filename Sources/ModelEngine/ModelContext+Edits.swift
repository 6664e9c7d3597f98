import Foundation
import ModelCore

extension ModelContext {
    /// Inserts a new object and returns its temporary identifier (remapped by ``save()``).
    /// Attributes not given take their defaults (or nil); relationships may point to saved
    /// objects or to objects inserted by this context. Values are converted to the attribute
    /// types where nothing is lost (an ISO 8601 string for a date, an int for a double).
    public func insert(
        _ entityName: String, attributes: [String: Value] = [:],
        relationships: [String: RelationshipValue] = [:]
    ) async throws -> PersistentIdentifier {
        try await serialized { try await performInsert(entityName, attributes, relationships, id: nil) }
    }

    /// Changes attributes and relationships of an object. A to-many value replaces the whole set
    /// (use ``add(_:to:of:)`` and ``remove(_:from:of:)`` to change part of it).
    public func update(
        _ id: PersistentIdentifier, attributes: [String: Value] = [:],
        relationships: [String: RelationshipValue] = [:]
    ) async throws {
        try await serialized { try await performUpdate(id, attributes, relationships) }
    }

    /// Adds objects to a to-many relationship.
    public func add(_ targets: [PersistentIdentifier], to relationshipName: String, of id: PersistentIdentifier)
        async throws
    {
        try await serialized { try await changeToMany(relationshipName, of: id, targets: targets, adding: true) }
    }

    /// Removes objects from a to-many relationship.
    public func remove(_ targets: [PersistentIdentifier], from relationshipName: String, of id: PersistentIdentifier)
        async throws
    {
        try await serialized { try await changeToMany(relationshipName, of: id, targets: targets, adding: false) }
    }

    /// Marks an object for deletion; delete rules run when the context saves.
    public func delete(_ id: PersistentIdentifier) async throws {
        try await serialized { try await performDelete(id) }
    }

    /// Makes several edits in order, as one operation, all or none: if one fails, the context is
    /// left as it was before the first. Returns one identifier per edit: the new object's
    /// temporary identifier for inserts, the edited object's for the others.
    public func apply(_ edits: [ObjectEdit]) async throws -> [PersistentIdentifier] {
        try await serialized {
            let before = pending
            do {
                return try await performEdits(edits)
            } catch {
                restorePending(before)
                throw error
            }
        }
    }

    /// Makes `edits` in order (inside an operation); a failure names the edit.
    @discardableResult
    func performEdits(_ edits: [ObjectEdit]) async throws -> [PersistentIdentifier] {
        var ids: [PersistentIdentifier] = []
        ids.reserveCapacity(edits.count)
        let inserts = edits.count { if case .insert = $0 { true } else { false } }
        if inserts > 16 { pending.reserveInserts(inserts) }
        for (index, edit) in edits.enumerated() {
            do {
                ids.append(try await perform(edit))
            } catch let error as ModelError {
                throw error.locating(change: index, of: edits.count)
            }
        }
        return ids
    }

    /// Puts back the pending changes of `before`, keeping what was read from the store since.
    func restorePending(_ before: PendingChanges) {
        let bases = pending.bases
        pending = before
        for (id, base) in bases where !pending.isTouched(id) { pending.bases[id] = base }
    }

    private func perform(_ edit: ObjectEdit) async throws -> PersistentIdentifier {
        switch edit {
        case .insert(let entity, let attributes, let relationships, let id):
            return try await performInsert(entity, attributes, relationships, id: id)
        case .update(let id, let attributes, let relationships):
            try await performUpdate(id, attributes, relationships)
            return id
        case .delete(let id):
            try await performDelete(id)
            return id
        case .add(let targets, let relationship, let id):
            try await changeToMany(relationship, of: id, targets: targets, adding: true)
            return id
        case .remove(let targets, let relationship, let id):
            try await changeToMany(relationship, of: id, targets: targets, adding: false)
            return id
        case .expectVersion(let version, let id):
            try checkIdentifier(id)
            guard !id.isTemporary else {
                throw ModelError(
                    .invalidArgument, "\(id) is a new object's temporary URI; only a stored object has a version",
                    context: ["uri": id.uriRepresentation])
            }
            pending.expectedVersions[id] = version
            return id
        }
    }

    private func performInsert(
        _ entityName: String, _ attributes: [String: Value], _ relationships: [String: RelationshipValue],
        id given: PersistentIdentifier?
    ) async throws -> PersistentIdentifier {
        let entity = try container.insertableEntity(entityName)
        let values = try container.insertedValues(attributes, for: entity)
        let id =
            try given.map { try checkNewIdentifier($0, entity: entityName) }
            ?? PersistentIdentifier.temporary(storeIdentifier: container.storeIdentifier, entityName: entityName)
        let edits = try await prepare(relationships, of: id, entity: entity, isNew: true)
        pending.recordInsert(id, attributes: values)
        apply(edits, to: id)
        return id
    }

    private func performUpdate(
        _ id: PersistentIdentifier, _ attributes: [String: Value],
        _ relationships: [String: RelationshipValue]
    ) async throws {
        let entity = try await liveObject(id)
        let values = try container.convert(attributes, for: entity)
        let edits = try await prepare(relationships, of: id, entity: entity, isNew: false)
        if !values.isEmpty { pending.recordAttributes(values, of: id) }
        apply(edits, to: id)
    }

    private func performDelete(_ id: PersistentIdentifier) async throws {
        _ = try await liveObject(id)
        pending.recordDelete(id)
    }

    /// Checks an identifier a caller chose for a new object: temporary, of this store and of the
    /// inserted entity, and not used yet.
    func checkNewIdentifier(_ id: PersistentIdentifier, entity: String) throws(ModelError) -> PersistentIdentifier {
        let id = try container.checkNewIdentifier(id, entity: entity)
        guard !pending.isKnown(id) else { throw Self.alreadyNamed(id) }
        return id
    }

    /// The error for a new object given an identifier that names another already.
    static func alreadyNamed(_ id: PersistentIdentifier) -> ModelError {
        ModelError(
            .invalidIdentifier, "\(id) already names an object of this context", context: ["uri": id.uriRepresentation])
    }

    // MARK: Helpers

    private func changeToMany(
        _ name: String, of id: PersistentIdentifier, targets: [PersistentIdentifier], adding: Bool
    ) async throws {
        let entity = try await liveObject(id)
        guard let relationship = entity.relationship(name) else {
            throw ModelError.unknownProperty(name, entity: entity.name)
        }
        guard relationship.isToMany else {
            throw ModelError(
                .invalidArgument, "'\(entity.name).\(name)' is to-one: set it with update(_:relationships:)",
                context: ["relationship": name])
        }
        try await loadTargets(targets, for: relationship, removing: !adding)
        if adding {
            try await loadHolders(of: targets, for: relationship)
            for target in targets { pending.link(relationship, id, target, direct: true) }
        } else {
            for target in targets { pending.unlink(relationship, id, target, direct: true) }
        }
    }

    /// Checks that `id` is an object this context can change, loads it, and returns its entity.
    func liveObject(_ id: PersistentIdentifier) async throws -> ResolvedEntity {
        try checkIdentifier(id)
        guard !pending.deletedSet.contains(id) else {
            throw ModelError(.notFound, "\(id) was deleted in this context", context: ["uri": id.uriRepresentation])
        }
        try await load([id], required: true)
        return try schema.entity(id.entityName)
    }

    /// A relationship change checked and with everything it touches loaded, ready to apply.
    struct PreparedEdit {
        var relationship: ResolvedRelationship
        var value: RelationshipValue
    }

    /// Checks relationship values (names, targets of this store and of the right entity, targets
    /// that exist) and loads every object the edits will touch: targets, their current holders,
    /// and the source's current targets.
    func prepare(
        _ relationships: [String: RelationshipValue], of id: PersistentIdentifier,
        entity: ResolvedEntity, isNew: Bool
    ) async throws -> [PreparedEdit] {
        var edits: [PreparedEdit] = []
        for (name, value) in relationships.sorted(by: { $0.key < $1.key }) {
            guard let relationship = entity.relationship(name) else {
                if entity.attribute(name) != nil {
                    throw ModelError(
                        .invalidArgument, "'\(entity.name).\(name)' is an attribute, not a relationship",
                        context: ["entity": entity.name, "property": name])
                }
                throw ModelError.unknownProperty(name, entity: entity.name)
            }
            let targets: [PersistentIdentifier]
            switch value {
            case .toOne(let target):
                guard !relationship.isToMany else {
                    throw ModelError(
                        .typeMismatch, "'\(entity.name).\(name)' is to-many: give it a list of objects",
                        context: ["relationship": name])
                }
                targets = target.map { [$0] } ?? []
            case .toMany(let list):
                guard relationship.isToMany else {
                    throw ModelError(
                        .typeMismatch, "'\(entity.name).\(name)' is to-one: give it one object or nil",
                        context: ["relationship": name])
                }
                targets = list
            }
            try await loadTargets(targets, for: relationship)
            try await loadHolders(of: targets, for: relationship)
            if !isNew, let current = pending.view(of: id) {
                try await load(Array(current.targets(of: relationship)), required: false)
            }
            edits.append(PreparedEdit(relationship: relationship, value: value))
        }
        return edits
    }

    /// Applies prepared edits: to-one values are set, to-many values replace the set.
    func apply(_ edits: [PreparedEdit], to id: PersistentIdentifier) {
        for edit in edits {
            switch edit.value {
            case .toOne(let target):
                pending.setToOne(edit.relationship, of: id, to: target, direct: true)
            case .toMany(let list):
                let wanted = Set(list)
                let current = pending.view(of: id)?.targets(of: edit.relationship) ?? []
                for old in ObjectState.keyOrder(current.subtracting(wanted)) {
                    pending.unlink(edit.relationship, id, old, direct: true)
                }
                for new in list where !current.contains(new) {
                    pending.link(edit.relationship, id, new, direct: true)
                }
            }
        }
    }

    /// Checks and loads relationship targets: of this store, of the destination entity (or a
    /// subentity), existing and not deleted in this context. Targets being removed need not
    /// exist any more (docs/storage-semantics.md): one that is gone is loaded if it can be.
    func loadTargets(_ targets: [PersistentIdentifier], for relationship: ResolvedRelationship, removing: Bool = false)
        async throws
    {
        for target in targets {
            try checkIdentifier(target)
            guard schema[target.entityName]?.isKind(of: relationship.destination) == true else {
                throw ModelError(
                    .typeMismatch,
                    "\(target) is a \(target.entityName), but '\(relationship.name)' holds \(relationship.destination) objects",
                    context: ["relationship": relationship.name, "uri": target.uriRepresentation])
            }
            guard removing || !pending.deletedSet.contains(target) else {
                throw ModelError(
                    .notFound, "\(target) was deleted in this context", context: ["uri": target.uriRepresentation])
            }
        }
        try await load(targets, required: !removing)
    }

    /// Loads the objects that currently hold `targets` through a to-one inverse of
    /// `relationship`, since linking takes the targets away from them.
    func loadHolders(of targets: [PersistentIdentifier], for relationship: ResolvedRelationship) async throws {
        guard let inverseName = relationship.inverse,
            let inverse = try schema.entity(relationship.destination).relationship(inverseName), !inverse.isToMany
        else { return }
        let holders = targets.compactMap { pending.view(of: $0)?.toOne[inverseName] ?? nil }
        try await load(holders, required: false)
    }
}
