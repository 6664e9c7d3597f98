import ModelCore

extension SaveOperation {
    /// A unique constraint and the entity that declares it: it holds over that entity and its
    /// subentities.
    struct Constraint: Hashable {
        let declaringEntity: String
        let attributes: [String]
    }

    /// Who holds a key of a constraint in the state after the save.
    private enum Holder {
        case insert(Int)
        case stored(ObjectRef, entity: String)
    }

    /// Step 3: in the state the save would leave, no two objects under a constraint share a key
    /// without a nil part. Inserts are checked in order against saved objects (those the save
    /// neither deletes nor moves off the key) and earlier inserts; with `.upsert` a colliding
    /// insert becomes an update of the object it collides with. Updates are then checked against
    /// everything else and always fail on a collision.
    func checkUniqueness() throws {
        var movedAway: [Constraint: Set<ObjectRef>] = [:]
        let deleted = Set(plan.deletes.compactMap { existing($0.id)?.ref })
        for update in plan.updates {
            guard let (ref, row) = existing(update.id), let entity = schema[row.entity] else { continue }
            for constraint in constraints(of: entity) where constraint.attributes.contains(where: { update.values[$0] != nil }) {
                movedAway[constraint, default: []].insert(ref)
            }
        }
        var holders: [Constraint: [[Value]: Holder]] = [:]
        for index in plan.inserts.indices {
            let insert = plan.inserts[index]
            for constraint in constraints(of: insert.entity) {
                let key = constraint.attributes.map { insertValues[index][$0] ?? .null }
                guard !key.contains(where: \.isNull) else { continue }
                let excluded = deleted.union(movedAway[constraint] ?? [])
                if let holder = try holders[constraint]?[key] ?? storedHolder(constraint, key, excluding: excluded) {
                    guard changes.uniquenessPolicy == .upsert else { throw collision(constraint, key, with: holder, for: insert.id) }
                    upsert(index, into: holder)
                    break
                }
                holders[constraint, default: [:]][key] = .insert(index)
            }
        }
        for update in plan.updates {
            guard let (ref, row) = existing(update.id), !deleted.contains(ref), let entity = schema[row.entity] else { continue }
            for constraint in constraints(of: entity) where constraint.attributes.contains(where: { update.values[$0] != nil }) {
                let storedValues = try self.storedValues(constraint.attributes, of: ref, entity: entity)
                let key = constraint.attributes.map { update.values[$0] ?? storedValues[$0] ?? .null }
                guard !key.contains(where: \.isNull) else { continue }
                let excluded = deleted.union(movedAway[constraint] ?? []).union([ref])
                if let holder = try holders[constraint]?[key] ?? storedHolder(constraint, key, excluding: excluded) {
                    throw collision(constraint, key, with: holder, for: update.id)
                }
                holders[constraint, default: [:]][key] = .stored(ref, entity: row.entity)
            }
        }
    }

    /// The constraints that hold over objects of `entity`: its own and its ancestors'.
    func constraints(of entity: ResolvedEntity) -> [Constraint] {
        entity.ancestors.reversed().flatMap { name in
            (schema.schema.entity(named: name)?.uniqueConstraints ?? []).map { Constraint(declaringEntity: name, attributes: $0) }
        }
    }

    private func upsert(_ index: Int, into holder: Holder) {
        switch holder {
        case .insert(let target):
            insertValues[target].merge(insertValues[index]) { _, new in new }
            insertLinks[target] += insertLinks[index]
            upserts[index] = .insert(target)
        case .stored(let ref, let entity):
            upserts[index] = .stored(ref, entity: entity)
        }
    }

    /// The saved object of the constraint's scope with this key, unless excluded.
    private func storedHolder(_ constraint: Constraint, _ key: [Value], excluding excluded: Set<ObjectRef>) throws -> Holder? {
        guard let declaring = schema[constraint.declaringEntity] else { return nil }
        let table = layout.table(for: declaring)
        var conditions = constraint.attributes.enumerated().map { "\(SQL.quote($1)) = ?\($0 + 1)" }
        if declaring.superentity != nil {
            // Literal names, as in the partial unique index, so SQLite can use it.
            conditions.append("\"_entity\" IN (\(declaring.descendants.map(SQL.literal).joined(separator: ", ")))")
        }
        var holder: Holder?
        try connection.query("SELECT \"_pk\", \"_entity\" FROM \(table.quoted) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \"_pk\"", key) { row in
            let ref = ObjectRef(root: table.name, key: row.int64(0))
            if holder == nil, !excluded.contains(ref) { holder = .stored(ref, entity: row.text(1)) }
        }
        return holder
    }

    private func storedValues(_ names: [String], of ref: ObjectRef, entity: ResolvedEntity) throws -> [String: Value] {
        let attributes = names.compactMap { entity.attribute($0) }
        var values: [String: Value] = [:]
        let table = layout.table(root: ref.root)
        try connection.query("SELECT \(attributes.map { SQL.quote($0.name) }.joined(separator: ", ")) FROM \(table.quoted) WHERE \"_pk\" = ?1",
                             [.int(ref.key)]) { row in
            for (index, attribute) in attributes.enumerated() { values[attribute.name] = try row.value(Int32(index), as: attribute.type) }
        }
        return values
    }

    private func collision(_ constraint: Constraint, _ key: [Value], with holder: Holder, for id: PersistentIdentifier) -> ModelError {
        let other: PersistentIdentifier
        switch holder {
        case .insert(let index): other = plan.inserts[index].id
        case .stored(let ref, let entity):
            other = PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(ref.key))
        }
        let attributes = constraint.attributes.joined(separator: ", ")
        let values = key.map(\.debugText).joined(separator: ", ")
        return ModelError(.uniqueConstraint,
                          "\(id) breaks the unique constraint (\(attributes)) of \(constraint.declaringEntity): \(other) already has \(values); change the values, or save with the upsert policy to update that object instead",
                          context: ["entity": constraint.declaringEntity, "attributes": constraint.attributes.joined(separator: ","),
                                    "values": values, "uri": other.uriRepresentation])
    }
}
