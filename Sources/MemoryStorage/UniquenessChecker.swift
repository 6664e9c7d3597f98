import ModelCore

/// Finds unique-constraint collisions in the state a change set leaves: stored objects that the
/// change set neither changes nor deletes are looked up in the state's unique index; objects the
/// change set writes are looked up among the values claimed so far.
struct UniquenessChecker {
    /// Two objects that share the values of one constraint.
    struct Collision {
        let constraint: [String]
        let values: [Value]
        let other: Participant
    }

    private let state: MemoryState
    private let deleted: Set<ObjectRef>
    /// Stored objects whose final values are in ``finals`` (their stored values don't count).
    private var changed: Set<ObjectRef>
    /// The final entity and attribute values of every participant registered so far.
    private var finals: [Participant: (entity: ResolvedEntity, values: [String: Value])] = [:]
    private var claims: [String: [UniqueKey: [Participant]]] = [:]

    init(state: MemoryState, deleted: Set<ObjectRef>, changed: Set<ObjectRef>) {
        self.state = state
        self.deleted = deleted
        self.changed = changed
    }

    /// The entity and values `participant` has now: its final ones if registered, else (for a
    /// stored object) its stored ones.
    func current(_ participant: Participant) -> (entity: ResolvedEntity, values: [String: Value])? {
        if let final = finals[participant] { return final }
        guard case .stored(let ref) = participant, let row = state.row(ref), let entity = state.schema[row.entity] else { return nil }
        return (entity, row.attributes)
    }

    /// The first object that `participant` would collide with if it had `values`, checking the
    /// constraints of `entity` in order, stored objects before those of the change set.
    func collision(_ participant: Participant, entity: ResolvedEntity, values: [String: Value]) -> Collision? {
        let root = entity.root
        for constraint in UniqueKey.constraints(of: entity) {
            let parts = constraint.map { values[$0] ?? .null }
            guard let key = UniqueKey(parts) else { continue }
            let slot = UniqueKey.slot(root: root, constraint: constraint)
            for pk in (state.uniqueIndex[slot]?[key] ?? []).sorted() {
                let ref = ObjectRef(root: root, key: pk)
                guard participant != .stored(ref), !deleted.contains(ref), !changed.contains(ref),
                      let row = state.row(ref), UniqueKey.sameValues(constraint.map(row.value), parts) else { continue }
                return Collision(constraint: constraint, values: parts, other: .stored(ref))
            }
            for other in claims[slot]?[key] ?? [] where other != participant {
                guard let final = finals[other], UniqueKey.sameValues(constraint.map { final.values[$0] ?? .null }, parts) else { continue }
                return Collision(constraint: constraint, values: parts, other: other)
            }
        }
        return nil
    }

    /// Records the final values of `participant`, replacing what it claimed before.
    mutating func register(_ participant: Participant, entity: ResolvedEntity, values: [String: Value]) {
        unregister(participant)
        if case .stored(let ref) = participant { changed.insert(ref) }
        finals[participant] = (entity, values)
        for constraint in UniqueKey.constraints(of: entity) {
            guard let key = UniqueKey(constraint.map { values[$0] ?? .null }) else { continue }
            claims[UniqueKey.slot(root: entity.root, constraint: constraint), default: [:]][key, default: []].append(participant)
        }
    }

    private mutating func unregister(_ participant: Participant) {
        guard let old = finals[participant] else { return }
        for constraint in UniqueKey.constraints(of: old.entity) {
            guard let key = UniqueKey(constraint.map { old.values[$0] ?? .null }) else { continue }
            claims[UniqueKey.slot(root: old.entity.root, constraint: constraint)]?[key]?.removeAll { $0 == participant }
        }
        finals[participant] = nil
    }
}
