import ModelCore

/// An object as a save sees it: stored already, or the `index`th insert of the change set.
enum Participant: Hashable {
    case stored(ObjectRef)
    case inserted(Int)
}

/// A relationship change of one object, its targets resolved.
struct LinkChange {
    enum Kind {
        case toOne(Participant?)
        case toMany(added: [Participant], removed: [Participant])
    }

    let relationship: ResolvedRelationship
    let kind: Kind
}

/// An insert, checked: its entity, the attributes it gave (converted to their types, nil
/// included) and its relationship changes.
struct PlannedInsert {
    let id: PersistentIdentifier
    let entity: ResolvedEntity
    let given: [String: Value]
    let links: [LinkChange]
    /// The attribute and relationship names it gave, sorted (for the history of an upsert).
    let changedProperties: [String]

    /// Every attribute of the new object: the given value, else the default, else nil.
    var attributes: [String: Value] {
        var values: [String: Value] = [:]
        for attribute in entity.attributes {
            let value = given[attribute.name] ?? attribute.defaultValue ?? .null
            if !value.isNull { values[attribute.name] = value }
        }
        return values
    }
}

/// An update of a stored object, checked.
struct PlannedUpdate {
    let id: PersistentIdentifier
    let ref: ObjectRef
    let entity: ResolvedEntity
    let attributes: [String: Value]
    let links: [LinkChange]
    let changedProperties: [String]
}

/// Everything a save (or an overlay) writes, computed from the state without changing it: a
/// save either applies all of it, which cannot fail, or throws before anything changed.
struct WritePlan {
    /// The final rows of inserted and updated objects.
    var rows: [ObjectRef: Row] = [:]
    /// Join-table pairs to add (`present`) or remove, in order.
    var joinChanges: [(table: String, source: Int64, target: Int64, present: Bool)] = []
    /// Objects to delete (they exist), in change-set order.
    var deletes: [ObjectRef] = []
    /// The new last key of every hierarchy that allocated keys.
    var sequences: [String: Int64] = [:]
    /// Every insert's temporary identifier, mapped to its permanent one.
    var remap: [PersistentIdentifier: PersistentIdentifier] = [:]
    /// The inserts that became new objects, by temporary identifier, with the key they were given.
    var insertedRefs: [PersistentIdentifier: ObjectRef] = [:]
    /// The new version of every inserted or updated object.
    var versions: [PersistentIdentifier: Int64] = [:]
    /// What the history transaction records: inserts, then updates, then deletes.
    var changes: [HistoryChange] = []
}

extension MemoryState {
    /// Applies a plan: rows, then join pairs, then deletes (which also remove their join pairs).
    mutating func apply(_ plan: WritePlan) {
        for (ref, row) in plan.rows { write(ref, row) }
        for change in plan.joinChanges {
            setJoin(change.table, source: change.source, target: change.target, present: change.present)
        }
        for ref in plan.deletes { remove(ref) }
        for (root, key) in plan.sequences { sequences[root] = max(sequences[root] ?? 0, key) }
    }
}
