import ModelCore

extension ContextCore {
    /// A relationship's value as the context has it: its target objects, made on demand.
    func relatedValue(of record: ObjectRecord, _ property: PropertyInfo) -> Any {
        guard let ids = record.relationships[property.name] else {
            guard record.isLoaded else { fatalError(record.faultMessage(reading: property.name)) }
            return property.value(of: [])
        }
        return property.value(of: ids.map { object(for: $0) })
    }

    /// Sets a relationship of an object in this context to `value` (what the property's setter
    /// was given): objects that belong to no context are inserted, inverses are kept.
    func setRelationship(_ record: ObjectRecord, _ property: PropertyInfo, to value: Any) {
        setRelationship(record, property, targets: property.objects(in: value))
    }

    func setRelationship(_ record: ObjectRecord, _ property: PropertyInfo, targets: [AnyObject]) {
        var ids: [PersistentIdentifier] = []
        var seen = Set<PersistentIdentifier>()
        for target in targets {
            guard let model = target as? any PersistentModel else { continue }
            insert(model)
            let id = model.persistentModelID
            if seen.insert(id).inserted { ids.append(id) }
        }
        assign(record, property.name, ids, explicit: true)
    }

    /// Sets a relationship's targets, and the inverse relationships of the targets gained and
    /// lost. An explicit change is sent at the next save; an inverse is not (the store keeps
    /// inverses itself), but it is undone by a rollback all the same.
    func assign(_ record: ObjectRecord, _ name: String, _ ids: [PersistentIdentifier], explicit: Bool) {
        let old = record.relationships[name] ?? []
        if explicit {
            record.changed.insert(name)
            record.unsent[name] = nextGeneration()
        }
        guard old != ids else {
            if explicit { markPending(record) }
            return
        }
        if record.savedRelationships[name] == nil { record.savedRelationships[name] = old }
        record.relationships[name] = ids
        if !explicit {
            record.derived.insert(name)
            if let object = record.object { record.info.property(name).metadata.notify(object) }
        }
        markPending(record)
        guard let inverse = types.inverse(of: record.info, name) else { return }
        let kept = Set(ids), before = Set(old)
        for lost in old where !kept.contains(lost) {
            guard let target = records[lost], target.isLoaded, !target.isDetached else { continue }
            unlink(target, inverse, from: record.id)
        }
        for gained in ids where !before.contains(gained) {
            guard let target = records[gained], target.isLoaded, !target.isDetached else { continue }
            link(target, inverse, to: record.id, inverseOf: name)
        }
    }

    /// Removes `id` from a relationship of `target` (an inverse).
    private func unlink(_ target: ObjectRecord, _ name: String, from id: PersistentIdentifier) {
        let current = target.relationships[name] ?? []
        guard current.contains(id) else { return }
        assignDerived(target, name, current.filter { $0 != id })
    }

    /// Adds `id` to a relationship of `target` (an inverse). A to-one inverse taken from another
    /// object leaves that object's relationship (`original`) without `target`.
    private func link(_ target: ObjectRecord, _ name: String, to id: PersistentIdentifier, inverseOf original: String) {
        let property = target.info.property(name)
        let current = target.relationships[name] ?? []
        guard !current.contains(id) else { return }
        if property.isToMany {
            assignDerived(target, name, current + [id])
            return
        }
        for previous in current {
            guard let owner = records[previous], owner.isLoaded, !owner.isDetached else { continue }
            let held = owner.relationships[original] ?? []
            if held.contains(target.id) { assignDerived(owner, original, held.filter { $0 != target.id }) }
        }
        assignDerived(target, name, [id])
    }

    private func assignDerived(_ record: ObjectRecord, _ name: String, _ ids: [PersistentIdentifier]) {
        let old = record.relationships[name] ?? []
        guard old != ids else { return }
        if record.savedRelationships[name] == nil { record.savedRelationships[name] = old }
        record.relationships[name] = ids
        if !record.changed.contains(name) { record.derived.insert(name) }
        if let object = record.object { record.info.property(name).metadata.notify(object) }
        markPending(record)
    }

    /// Takes deleted objects out of every relationship that holds them (after a save).
    func removeFromRelationships(_ deleted: Set<PersistentIdentifier>) {
        guard !deleted.isEmpty else { return }
        for record in records.values {
            for (name, ids) in record.relationships where ids.contains(where: deleted.contains) {
                record.relationships[name] = ids.filter { !deleted.contains($0) }
                if let object = record.object { record.info.property(name).metadata.notify(object) }
            }
        }
    }

    /// Renames temporary identifiers to permanent ones everywhere (after a save). An insert
    /// merged into an object the context already has (an upsert) becomes that object: its model
    /// reads the object's record from then on, so the context still has one record per object.
    func remap(_ remapped: [PersistentIdentifier: PersistentIdentifier]) {
        guard !remapped.isEmpty else { return }
        for (temporary, permanent) in remapped {
            guard let record = records.removeValue(forKey: temporary) else { continue }
            if let existing = records[permanent], existing !== record, !existing.isDetached {
                join(record, into: existing)
                continue
            }
            record.id = permanent
            records[permanent] = record
        }
        func renamed(_ ids: [PersistentIdentifier]) -> [PersistentIdentifier] { ids.map { remapped[$0] ?? $0 } }
        for record in records.values {
            for (name, ids) in record.relationships where ids.contains(where: { $0.isTemporary }) {
                record.relationships[name] = renamed(ids)
            }
        }
    }

    /// Makes the model of `inserted`, a saved insert merged into `existing`'s object, read
    /// `existing`'s record; `inserted` leaves the context.
    private func join(_ inserted: ObjectRecord, into existing: ObjectRecord) {
        inserted.id = existing.id
        inserted.isDetached = true
        inserted.pinned = nil
        guard let object = inserted.object as? any PersistentModel else { return }
        object._$modelState.record = existing
        // Its attributes are read again, from the record (which the save's caller reloads).
        for property in inserted.info.attributes { property.metadata.writeSlot(object, nil) }
        if existing.object == nil {
            existing.object = object
        } else if existing.object !== object {
            existing.joined.append(.init(object: object))
        }
    }
}
