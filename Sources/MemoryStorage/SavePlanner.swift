import Foundation
import ModelCore

/// Checks a change set against a state and computes what it writes (a ``WritePlan``), following
/// the numbered steps of docs/storage-semantics.md. It never changes the state, so a save that
/// fails leaves the store exactly as it was.
///
/// For an overlay (a context's pending changes) it checks neither versions nor uniqueness, and
/// skips what refers to objects that are gone, instead of failing.
struct SavePlanner {
    enum Mode {
        case save(UniquenessPolicy)
        case overlay
    }

    let state: MemoryState
    let storeIdentifier: UUID
    let mode: Mode
    private var insertIndex: [PersistentIdentifier: Int] = [:]
    private var insertEntities: [ResolvedEntity] = []

    init(state: MemoryState, storeIdentifier: UUID, mode: Mode) {
        self.state = state
        self.storeIdentifier = storeIdentifier
        self.mode = mode
    }

    var isOverlay: Bool {
        if case .overlay = mode { return true }
        return false
    }

    /// Checks `changes` and computes what they write. Throws `SaveConflicts` for version
    /// mismatches and `ModelError` for everything else.
    mutating func plan(_ changes: ChangeSet) throws -> WritePlan {
        try checkIdentifiers(changes)
        if !isOverlay { try checkVersions(changes) }
        var inserts: [PlannedInsert] = []
        for (index, insert) in changes.inserts.enumerated() {
            let entity = insertEntities[index]
            inserts.append(PlannedInsert(
                id: insert.id, entity: entity,
                given: try attributes(insert.attributes, of: entity, id: insert.id),
                links: try links(insert.relationships, of: entity, id: insert.id),
                changedProperties: (Array(insert.attributes.keys) + Array(insert.relationships.keys)).sorted()))
        }
        var updates: [PlannedUpdate] = []
        for update in changes.updates {
            guard let ref = state.object(for: update.id), let row = state.row(ref), let entity = state.schema[row.entity] else {
                if isOverlay { continue }
                throw ModelError(.notFound, "cannot update \(update.id): no such object in this store; it may have been deleted",
                                 context: ["uri": update.id.uriRepresentation])
            }
            updates.append(PlannedUpdate(
                id: update.id, ref: ref, entity: entity,
                attributes: try attributes(update.attributes, of: entity, id: update.id),
                links: try links(update.relationships, of: entity, id: update.id),
                changedProperties: update.changedProperties))
        }
        var deletes: [ObjectRef] = []
        for delete in changes.deletes {
            // Deletes of objects already gone are skipped.
            if let ref = state.object(for: delete.id), !deletes.contains(ref) { deletes.append(ref) }
        }
        var merges: [Int: Participant] = [:]
        if case .save(let policy) = mode {
            merges = try resolveUniqueness(inserts, updates, deleted: Set(deletes), policy: policy)
        }
        return build(inserts, updates, deletes, merges)
    }

    // MARK: Identifiers and versions

    /// Every identifier belongs to this store and names a known entity; inserts carry temporary
    /// identifiers (each once) of concrete entities, updates and deletes permanent ones.
    private mutating func checkIdentifiers(_ changes: ChangeSet) throws(ModelError) {
        for (index, insert) in changes.inserts.enumerated() {
            let entity = try check(insert.id)
            guard insert.id.isTemporary else {
                throw ModelError(.invalidIdentifier, "\(insert.id) is a permanent identifier: an insert carries a temporary one (…/t<uuid>); send changes to a saved object as an update",
                                 context: ["uri": insert.id.uriRepresentation])
            }
            guard !entity.isAbstract else {
                throw ModelError(.invalidArgument, "cannot insert \(insert.id): entity '\(entity.name)' is abstract; insert one of its subentities (\(entity.descendants.dropFirst().joined(separator: ", ")))",
                                 context: ["entity": entity.name])
            }
            guard insertIndex.updateValue(index, forKey: insert.id) == nil else {
                throw ModelError(.invalidArgument, "\(insert.id) is inserted twice in one change set", context: ["uri": insert.id.uriRepresentation])
            }
            insertEntities.append(entity)
        }
        let saved: [(id: PersistentIdentifier, action: String)] =
            changes.updates.map { ($0.id, "update") } + changes.deletes.map { ($0.id, "delete") }
        for (id, action) in saved {
            _ = try check(id)
            guard !id.isTemporary else {
                throw ModelError(.invalidIdentifier, "cannot \(action) \(id): it is a temporary identifier of an object that was never saved",
                                 context: ["uri": id.uriRepresentation])
            }
        }
        let relationshipChanges = changes.inserts.map(\.relationships) + changes.updates.map(\.relationships)
        for change in relationshipChanges.flatMap(\.values) {
            switch change {
            case .toOne(let target): if let target { _ = try check(target) }
            case .toMany(let added, let removed): for target in added + removed { _ = try check(target) }
            }
        }
    }

    /// The entity of an identifier of this store.
    private func check(_ id: PersistentIdentifier) throws(ModelError) -> ResolvedEntity {
        guard id.storeIdentifier == storeIdentifier else {
            throw ModelError(.invalidIdentifier,
                             "\(id) belongs to store \(id.storeIdentifier.uuidString.lowercased()), not to this store (\(storeIdentifier.uuidString.lowercased()))",
                             context: ["uri": id.uriRepresentation])
        }
        return try state.schema.entity(id.entityName)
    }

    /// Step 1: every update or delete with an expected version whose object's version differs,
    /// or whose object is gone, is a conflict.
    private func checkVersions(_ changes: ChangeSet) throws(SaveConflicts) {
        let reader = StoreReader(state: state, storeIdentifier: storeIdentifier)
        let expectations = changes.updates.map { ($0.id, $0.expectedVersion) } + changes.deletes.map { ($0.id, $0.expectedVersion) }
        var seen = Set<PersistentIdentifier>()
        var conflicts: [SaveConflicts.Conflict] = []
        for case let (id, expected?) in expectations where seen.insert(id).inserted {
            let ref = state.object(for: id)
            let row = ref.flatMap(state.row)
            guard row?.version != expected else { continue }
            let current = ref.flatMap { ref in row.map { reader.snapshot(ref, $0) } }
            conflicts.append(SaveConflicts.Conflict(id: id, expectedVersion: expected, current: current))
        }
        if !conflicts.isEmpty { throw SaveConflicts(conflicts) }
    }

    // MARK: Values and relationships

    /// The given attribute values, converted to their attributes' types (nil kept).
    private func attributes(_ given: [String: Value], of entity: ResolvedEntity, id: PersistentIdentifier) throws(ModelError) -> [String: Value] {
        var converted: [String: Value] = [:]
        for (name, value) in given.sorted(by: { $0.key < $1.key }) {
            guard let attribute = entity.attribute(name) else {
                if entity.relationship(name) != nil {
                    throw ModelError(.invalidArgument, "'\(name)' of '\(entity.name)' is a relationship: send it as a relationship change, not as an attribute value",
                                     context: ["entity": entity.name, "property": name, "uri": id.uriRepresentation])
                }
                throw ModelError.unknownProperty(name, entity: entity.name)
            }
            do {
                converted[name] = try value.converted(to: attribute.type)
            } catch {
                throw ModelError(.typeMismatch, "\(entity.name).\(name) holds \(attribute.type.rawValue) values, but \(id) gives it \(value.debugText)",
                                 context: ["entity": entity.name, "attribute": name, "expected": attribute.type.rawValue, "uri": id.uriRepresentation])
            }
        }
        return converted
    }

    /// The given relationship changes, each checked against its relationship, targets resolved.
    private func links(_ given: [String: RelationshipChange], of entity: ResolvedEntity, id: PersistentIdentifier) throws(ModelError) -> [LinkChange] {
        var links: [LinkChange] = []
        for (name, change) in given.sorted(by: { $0.key < $1.key }) {
            guard let relationship = entity.relationship(name) else {
                throw ModelError.unknownProperty(name, entity: entity.name)
            }
            switch (change, relationship.isToMany) {
            case (.toOne(let target), false):
                var resolved: Participant?
                if let target {
                    // An overlay skips targets that are gone.
                    guard let found = try self.target(target, of: relationship, owner: id) else { continue }
                    resolved = found
                }
                links.append(LinkChange(relationship: relationship, kind: .toOne(resolved)))
            case (.toMany(let added, let removed), true):
                var addedTargets: [Participant] = []
                for target in added {
                    if let resolved = try self.target(target, of: relationship, owner: id) { addedTargets.append(resolved) }
                }
                let removedTargets = removed.compactMap(removedTarget)
                links.append(LinkChange(relationship: relationship, kind: .toMany(added: addedTargets, removed: removedTargets)))
            default:
                let kind = relationship.isToMany ? "to-many: send the identifiers added and removed" : "to-one: send the one target, or nil"
                throw ModelError(.invalidArgument, "relationship '\(entity.name).\(name)' is \(kind)",
                                 context: ["entity": entity.name, "relationship": name, "uri": id.uriRepresentation])
            }
        }
        return links
    }

    /// The object a relationship is set to: stored, or inserted by this change set, and of the
    /// relationship's destination entity or a subentity. Nil for a target that is gone (overlays only).
    private func target(_ id: PersistentIdentifier, of relationship: ResolvedRelationship, owner: PersistentIdentifier) throws(ModelError) -> Participant? {
        let participant: Participant
        let entity: String
        if let index = insertIndex[id] {
            participant = .inserted(index)
            entity = insertEntities[index].name
        } else if let ref = state.object(for: id), let row = state.row(ref) {
            participant = .stored(ref)
            entity = row.entity
        } else {
            if isOverlay { return nil }
            let why = id.isTemporary ? "it is neither saved nor inserted by this change set" : "no such object in this store; it may have been deleted"
            throw ModelError(.notFound, "cannot set '\(relationship.name)' of \(owner) to \(id): \(why)",
                             context: ["uri": id.uriRepresentation, "relationship": relationship.name])
        }
        guard state.schema[entity]?.isKind(of: relationship.destination) == true else {
            throw ModelError(.typeMismatch, "cannot set '\(relationship.name)' of \(owner) to \(id): it is a \(entity), and '\(relationship.name)' holds \(relationship.destination) objects",
                             context: ["uri": id.uriRepresentation, "relationship": relationship.name, "expected": relationship.destination])
        }
        return participant
    }

    /// An object removed from a to-many relationship: it need not exist any more.
    private func removedTarget(_ id: PersistentIdentifier) -> Participant? {
        if let index = insertIndex[id] { return .inserted(index) }
        guard let pk = id.primaryKey else { return nil }
        return .stored(ObjectRef(root: state.root(of: id.entityName), key: pk))
    }

    /// The identifier of a participant: its temporary one for inserts.
    func identifier(of participant: Participant, _ inserts: [PlannedInsert]) -> PersistentIdentifier {
        switch participant {
        case .stored(let ref):
            StoreReader(state: state, storeIdentifier: storeIdentifier).identifier(of: ref, entity: ref.root)
        case .inserted(let index):
            inserts[index].id
        }
    }
}
