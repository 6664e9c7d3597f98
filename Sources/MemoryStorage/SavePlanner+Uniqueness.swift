import ModelCore

extension SavePlanner {
    /// Step 3: unique constraints, checked against the state the change set leaves (deleted
    /// objects and the old values of updated objects don't count; a key with a nil part never
    /// conflicts). Updates are checked first, then inserts in order. With `.upsert` an insert
    /// that collides merges into the object it collides with, which must then still be unique.
    /// Returns, for every insert that merges, the object it merges into.
    func resolveUniqueness(_ inserts: [PlannedInsert], _ updates: [PlannedUpdate], deleted: Set<ObjectRef>,
                           policy: UniquenessPolicy) throws(ModelError) -> [Int: Participant] {
        let changed = Set(updates.map(\.ref)).subtracting(deleted)
        var checker = UniquenessChecker(state: state, deleted: deleted, changed: changed)
        var finals: [ObjectRef: [String: Value]] = [:]
        for update in updates where !deleted.contains(update.ref) {
            guard let row = state.row(update.ref) else { continue }
            var values = finals[update.ref] ?? row.attributes
            for (name, value) in update.attributes { values[name] = value.isNull ? nil : value }
            finals[update.ref] = values
            let participant = Participant.stored(update.ref)
            if let collision = checker.collision(participant, entity: update.entity, values: values) {
                throw uniqueError(participant, update.entity, collision, inserts, isInsert: false)
            }
            checker.register(participant, entity: update.entity, values: values)
        }

        var merges: [Int: Participant] = [:]
        for (index, insert) in inserts.enumerated() {
            let participant = Participant.inserted(index)
            let values = insert.attributes
            guard let collision = checker.collision(participant, entity: insert.entity, values: values) else {
                checker.register(participant, entity: insert.entity, values: values)
                continue
            }
            guard policy == .upsert, let existing = checker.current(collision.other) else {
                throw uniqueError(participant, insert.entity, collision, inserts, isInsert: true)
            }
            // The insert becomes an update of the object it collides with.
            merges[index] = collision.other
            var merged = existing.values
            for (name, value) in insert.given where existing.entity.attribute(name) != nil {
                merged[name] = value.isNull ? nil : value
            }
            if let again = checker.collision(collision.other, entity: existing.entity, values: merged) {
                throw uniqueError(collision.other, existing.entity, again, inserts, isInsert: false)
            }
            checker.register(collision.other, entity: existing.entity, values: merged)
        }
        return merges
    }

    /// `uniqueConstraint`, naming the entity, the attributes, the values and the existing object.
    private func uniqueError(_ participant: Participant, _ entity: ResolvedEntity, _ collision: UniquenessChecker.Collision,
                             _ inserts: [PlannedInsert], isInsert: Bool) -> ModelError {
        let subject = identifier(of: participant, inserts)
        let existing = identifier(of: collision.other, inserts)
        let attributes = collision.constraint.joined(separator: ", ")
        let values = zip(collision.constraint, collision.values).map { name, value in
            "\(name) = \(value.textForm.map { "\"\($0)\"" } ?? "nil")"
        }.joined(separator: ", ")
        let hint = isInsert ? "change the values, or save with the upsert policy to update the existing object"
                            : "change the values, or delete the other object first"
        return ModelError(.uniqueConstraint,
                          "cannot save \(subject): \(entity.name) objects must be unique in (\(attributes)), and \(existing) already has \(values); \(hint)",
                          context: ["entity": entity.name, "attributes": attributes, "values": values,
                                    "uri": existing.uriRepresentation])
    }
}
