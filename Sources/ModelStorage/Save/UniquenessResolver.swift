import ModelCore

/// Step 3 of a save: unique constraints, judged on the state the change set leaves. Saved
/// objects the change set neither updates nor deletes are looked up in the store
/// (``SaveReads/objects(root:constraint:equalTo:)``); the objects the change set writes are
/// looked up among the keys claimed so far.
/// Updates are checked first, in order, then inserts; with `.upsert` an insert that collides
/// merges into the object it collides with, which must then still be unique. A key with a nil
/// part never collides. A constraint holds among the objects of one hierarchy whose entity has it
/// (declared or inherited).
public struct UniquenessResolver<Reads: SaveReads> {
    public typealias Participant = SaveParticipant

    /// One constraint within one hierarchy.
    struct Slot: Hashable {
        let root: String
        let attributes: [String]
    }

    private struct Collision {
        let constraint: [String]
        let values: [Value]
        let other: Participant
    }

    let reads: Reads
    let plan: ChangeSetPlan
    private var deleted: Set<ObjectRef>
    /// Saved objects whose final values are in ``finals`` (their stored values don't count).
    private var changed: Set<ObjectRef>
    private var finals: [Participant: (entity: ResolvedEntity, values: [String: Value])] = [:]
    private var claims: [Slot: [ValueKey: [Participant]]] = [:]

    public init(reads: Reads, plan: ChangeSetPlan) {
        self.reads = reads
        self.plan = plan
        self.deleted = Set(plan.deletes)
        self.changed = Set(plan.updates.map(\.ref)).subtracting(deleted)
    }

    private var schema: ResolvedSchema { reads.schema }

    /// Checks every update and insert; returns, for each insert that merges, what it merges into.
    public mutating func resolve(policy: UniquenessPolicy) throws -> [Int: Participant] {
        guard schema.entities.contains(where: { !$0.uniqueConstraints.isEmpty }) else { return [:] }
        for update in plan.updates where !deleted.contains(update.ref) {
            let participant = Participant.stored(update.ref)
            var values = try current(participant)?.values ?? [:]
            for (name, value) in update.attributes { values[name] = value.isNull ? nil : value }
            if let collision = try collision(participant, entity: update.entity, values: values) {
                throw error(participant, update.entity, collision, isInsert: false)
            }
            register(participant, entity: update.entity, values: values)
        }
        var merges: [Int: Participant] = [:]
        for (index, insert) in plan.inserts.enumerated() {
            let participant = Participant.inserted(index)
            let values = insert.attributes.filter { !$0.value.isNull }
            guard let collision = try collision(participant, entity: insert.entity, values: values) else {
                register(participant, entity: insert.entity, values: values)
                continue
            }
            guard policy == .upsert, let existing = try current(collision.other) else {
                throw error(participant, insert.entity, collision, isInsert: true)
            }
            merges[index] = collision.other
            var merged = existing.values
            for (name, value) in insert.given where existing.entity.attribute(name) != nil {
                merged[name] = value.isNull ? nil : value
            }
            if let again = try self.collision(collision.other, entity: existing.entity, values: merged) {
                throw error(collision.other, existing.entity, again, isInsert: false)
            }
            register(collision.other, entity: existing.entity, values: merged)
        }
        return merges
    }

    /// The constraints of `entity` (its own and inherited ones), each once.
    public static func constraints(of entity: ResolvedEntity) -> [[String]] {
        var seen = Set<[String]>()
        return entity.uniqueConstraints.filter { seen.insert($0).inserted }
    }

    /// The entity and constrained values `participant` has now: its final ones if registered,
    /// else (for a saved object) its stored ones.
    private func current(_ participant: Participant) throws -> (entity: ResolvedEntity, values: [String: Value])? {
        if let final = finals[participant] { return final }
        guard case .stored(let ref) = participant, let (entity, values) = try storedValues(ref) else { return nil }
        return (entity, values)
    }

    /// The first object `participant` would collide with if it had `values`: constraints in
    /// order, saved objects (by key) before those of the change set.
    private func collision(_ participant: Participant, entity: ResolvedEntity, values: [String: Value]) throws
        -> Collision?
    {
        for constraint in Self.constraints(of: entity) {
            let parts = constraint.map { values[$0] ?? .null }
            guard !parts.contains(where: \.isNull) else { continue }
            let slot = Slot(root: entity.root, attributes: constraint)
            for ref in try storedHolders(slot, parts)
            where participant != .stored(ref) && !deleted.contains(ref) && !changed.contains(ref) {
                return Collision(constraint: constraint, values: parts, other: .stored(ref))
            }
            for other in claims[slot]?[ValueKey(parts)] ?? [] where other != participant {
                return Collision(constraint: constraint, values: parts, other: other)
            }
        }
        return nil
    }

    private mutating func register(_ participant: Participant, entity: ResolvedEntity, values: [String: Value]) {
        if let old = finals[participant] {
            for constraint in Self.constraints(of: old.entity) {
                let parts = constraint.map { old.values[$0] ?? .null }
                claims[Slot(root: old.entity.root, attributes: constraint)]?[ValueKey(parts)]?.removeAll {
                    $0 == participant
                }
            }
        }
        if case .stored(let ref) = participant { changed.insert(ref) }
        finals[participant] = (entity, values)
        for constraint in Self.constraints(of: entity) {
            let parts = constraint.map { values[$0] ?? .null }
            guard !parts.contains(where: \.isNull) else { continue }
            claims[Slot(root: entity.root, attributes: constraint), default: [:]][ValueKey(parts), default: []].append(
                participant)
        }
    }

    /// The saved objects of the slot's hierarchy that have its constraint and these values, by key.
    private func storedHolders(_ slot: Slot, _ parts: [Value]) throws -> [ObjectRef] {
        try reads.objects(root: slot.root, constraint: slot.attributes, equalTo: parts)
    }

    /// A saved object's entity and the stored values of its constrained attributes.
    private func storedValues(_ ref: ObjectRef) throws -> (ResolvedEntity, [String: Value])? {
        guard let object = try reads.storedObject(ref), let entity = schema[object.entity] else { return nil }
        let attributes = Array(Set(Self.constraints(of: entity).flatMap { $0 })).sorted().compactMap(entity.attribute)
        return (entity, attributes.isEmpty ? [:] : try reads.values(of: ref, attributes).filter { !$0.value.isNull })
    }

    /// `uniqueConstraint`, naming the entity, the attributes, the values and the existing object.
    private func error(_ participant: Participant, _ entity: ResolvedEntity, _ collision: Collision, isInsert: Bool)
        -> ModelError
    {
        let subject = identifier(of: participant), existing = identifier(of: collision.other)
        let attributes = collision.constraint.joined(separator: ", ")
        let values = zip(collision.constraint, collision.values).map { name, value in
            "\(name) = \(value.textForm.map { "\"\($0)\"" } ?? "nil")"
        }.joined(separator: ", ")
        let hint =
            isInsert
            ? "change the values, or save with the upsert policy to update the existing object"
            : "change the values, or delete the other object first"
        return ModelError(
            .uniqueConstraint,
            "cannot save \(subject): \(entity.name) objects must be unique in (\(attributes)), and \(existing) already has \(values); \(hint)",
            context: [
                "entity": entity.name, "attributes": attributes, "values": values, "uri": existing.uriRepresentation,
            ])
    }

    private func identifier(of participant: Participant) -> PersistentIdentifier {
        switch participant {
        case .inserted(let index):
            return plan.inserts[index].id
        case .stored(let ref):
            let entity = finals[participant]?.entity.name ?? (try? storedValues(ref))?.0.name ?? ref.root
            return reads.permanent(entity, ref.key)
        }
    }
}
