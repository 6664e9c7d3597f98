import Foundation
import ModelCore
import ModelStorage

/// A read-only view of a ``MemoryState``, as fetches, aggregates and snapshots see it: the stored
/// side of each relationship, the derived side computed from it, and the identifiers objects are
/// reported under (temporary ones for objects an overlay inserted).
struct StoreReader {
    let state: MemoryState
    let storeIdentifier: UUID
    /// Objects an overlay inserted, by the key they were given, with their temporary identifiers.
    let temporaryIDs: [ObjectRef: PersistentIdentifier]
    /// The inverse of ``temporaryIDs``.
    let temporaryRefs: [PersistentIdentifier: ObjectRef]

    init(state: MemoryState, storeIdentifier: UUID, temporaryRefs: [PersistentIdentifier: ObjectRef] = [:]) {
        self.state = state
        self.storeIdentifier = storeIdentifier
        self.temporaryRefs = temporaryRefs
        self.temporaryIDs = Dictionary(temporaryRefs.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
    }

    var schema: ResolvedSchema { state.schema }

    /// The identifier `ref` is reported under. `entity` names the object when it does not exist
    /// (a dangling reference): the relationship's destination.
    func identifier(of ref: ObjectRef, entity: String) -> PersistentIdentifier {
        if let temporary = temporaryIDs[ref] { return temporary }
        let name = state.row(ref)?.entity ?? entity
        return PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: name, key: .permanent(ref.key))
    }

    /// The reference an object literal of a predicate stands for: its key within its hierarchy
    /// (whether or not the object exists), or the object an overlay inserted under that temporary
    /// identifier.
    func reference(to id: PersistentIdentifier) -> ObjectRef {
        switch id.key {
        case .permanent(let pk): ObjectRef(root: state.root(of: id.entityName), key: pk)
        case .temporary: temporaryRefs[id] ?? .unmatched
        }
    }

    /// The target of a to-one relationship, which may dangle (its row gone) for a stored key.
    func toOne(_ ref: ObjectRef, _ row: Row, _ relationship: ResolvedRelationship) -> ObjectRef? {
        switch relationship.storage {
        case .foreignKey:
            return row.foreignKeys[relationship.name].map {
                ObjectRef(root: state.root(of: relationship.destination), key: $0)
            }
        case .inverseForeignKey(let entity, let name):
            let root = state.root(of: entity)
            return state.referrers["\(root).\(name)"]?[ref.key]?.min().map { ObjectRef(root: root, key: $0) }
        case .joinTable:
            return toMany(ref, relationship).first
        }
    }

    /// The objects of a to-many relationship, in key order.
    func toMany(_ ref: ObjectRef, _ relationship: ResolvedRelationship) -> [ObjectRef] {
        let keys: Set<Int64>
        let root: String
        switch relationship.storage {
        case .foreignKey:
            guard let row = state.row(ref), let target = toOne(ref, row, relationship) else { return [] }
            return [target]
        case .inverseForeignKey(let entity, let name):
            root = state.root(of: entity)
            keys = state.referrers["\(root).\(name)"]?[ref.key] ?? []
        case .joinTable(let table, let isOwner):
            root = isOwner ? table.targetRoot : table.sourceRoot
            let rows = state.joins[table.name]
            keys = (isOwner ? rows?.bySource[ref.key] : rows?.byTarget[ref.key]) ?? []
        }
        return keys.sorted().map { ObjectRef(root: root, key: $0) }
    }

    /// The snapshot of a stored object: every attribute and relationship of its entity, or only
    /// those named in `properties`.
    func snapshot(_ ref: ObjectRef, _ row: Row, properties: [String]? = nil) -> ObjectSnapshot {
        let wanted = properties.map(Set.init)
        var snapshot = ObjectSnapshot(id: identifier(of: ref, entity: row.entity), version: row.version)
        guard let entity = schema[row.entity] else { return snapshot }
        for attribute in entity.attributes where wanted?.contains(attribute.name) ?? true {
            snapshot.attributes[attribute.name] = row.value(attribute.name)
        }
        for relationship in entity.relationships where wanted?.contains(relationship.name) ?? true {
            if relationship.isToMany {
                let ids = toMany(ref, relationship).map { identifier(of: $0, entity: relationship.destination) }
                snapshot.relationships[relationship.name] = .toMany(ids)
            } else {
                let id = toOne(ref, row, relationship).map { identifier(of: $0, entity: relationship.destination) }
                snapshot.relationships[relationship.name] = .toOne(id)
            }
        }
        return snapshot
    }
}
