import ModelCore

/// The changes a context sends its unit of work, and what they cover.
struct OutgoingChanges {
    struct Entry {
        let record: ObjectRecord
        let unsent: [String: UInt64]
        let insert: Bool
        let delete: Bool
        let values: [String: Value]
    }

    var edits: [ObjectEdit] = []
    var entries: [Entry] = []
}

extension ContextCore {
    /// The edits that bring the unit of work up to date: inserts (attributes only), then
    /// updates of changed properties (and the relationships of inserted objects, which may point
    /// to each other), then deletes.
    func outgoingChanges() throws(ModelError) -> OutgoingChanges {
        var inserts: [ObjectEdit] = [], updates: [ObjectEdit] = [], deletes: [ObjectEdit] = []
        // The versions the context read the changed objects at: the unit of work checks them at
        // the save, whether or not it read the objects itself (a fetch of saved data, a watch,
        // a session opened since).
        var expectations: [ObjectEdit] = []
        func expect(_ record: ObjectRecord) {
            if record.lifecycle == .persisted, let version = record.version {
                expectations.append(.expectVersion(version, of: record.id))
            }
        }
        var outgoing = OutgoingChanges()
        for record in pending where !record.isDetached {
            if record.isMarkedDeleted {
                guard !(record.lifecycle == .inserted && !record.insertSent), !record.deleteSent else { continue }
                expect(record)
                deletes.append(.delete(record.id))
                outgoing.entries.append(.init(record: record, unsent: [:], insert: false, delete: true, values: [:]))
                continue
            }
            let insertNow = record.lifecycle == .inserted && !record.insertSent
            guard insertNow || !record.unsent.isEmpty, let object = record.anyObject ?? record.pinned else {
                continue
            }
            var values: [String: Value] = [:]
            var relationships: [String: RelationshipValue] = [:]
            let names =
                insertNow
                ? record.info.attributes.map(\.name)
                    + record.unsent.keys.filter { record.info.property($0).isRelationship }
                : Array(record.unsent.keys)
            for name in names {
                let property = record.info.property(name)
                if let codec = property.codec {
                    guard case .value(let value) = property.metadata.readSlot(object) else { continue }
                    do {
                        values[name] = try codec.encode(value)
                    } catch {
                        throw ModelError(
                            error.code, "\(record.info.entityName).\(name): \(error.message)", context: error.context)
                    }
                } else {
                    let ids = record.relationships[name] ?? []
                    relationships[name] = property.isToMany ? .toMany(ids) : .toOne(ids.first)
                }
            }
            if insertNow {
                inserts.append(
                    .insert(entity: record.info.entityName, attributes: values, relationships: [:], id: record.id))
                if !relationships.isEmpty {
                    updates.append(.update(record.id, attributes: [:], relationships: relationships))
                }
            } else {
                expect(record)
                updates.append(.update(record.id, attributes: values, relationships: relationships))
            }
            outgoing.entries.append(
                .init(record: record, unsent: record.unsent, insert: insertNow, delete: false, values: values))
        }
        outgoing.edits = inserts + expectations + updates + deletes
        return outgoing
    }

    /// Notes that the unit of work received `outgoing` (a change made since stays unsent).
    func didSend(_ outgoing: OutgoingChanges) {
        for entry in outgoing.entries {
            let record = entry.record
            if entry.insert { record.insertSent = true }
            if entry.delete { record.deleteSent = true }
            for (name, generation) in entry.unsent where record.unsent[name] == generation {
                record.unsent[name] = nil
            }
            record.sentAttributes.merge(entry.values) { _, new in new }
        }
        if !outgoing.edits.isEmpty { flushedChanges = true }
    }

    /// Sends the changes not yet sent, so that fetches see them.
    func flush() async throws {
        let outgoing = try outgoingChanges()
        guard !outgoing.edits.isEmpty else { return }
        try await unitOfWork().stage(outgoing.edits)
        didSend(outgoing)
    }

    /// After a save: identifiers become permanent, saved values become the records' own,
    /// deleted objects (those deleted by delete rules too) leave the context and every
    /// relationship, and objects without further changes are no longer held.
    func finishSave(_ report: SaveReport) {
        remap(report.remapped)
        var deleted = Set(report.deleted)
        for record in pending
        where record.isMarkedDeleted && (record.deleteSent || (record.lifecycle == .inserted && !record.insertSent)) {
            deleted.insert(record.id)
            detach(record, deleted: true)
        }
        // Every object the save updated (changed directly, as the other side of a relationship,
        // or by an upsert) is at the version it answered with; one it left as it was (a change
        // back to the stored value) is at the version read.
        for (id, version) in report.versions { records[id]?.version = version }
        for record in pending where !record.isDetached {
            record.attributes.merge(record.sentAttributes) { _, new in new }
            record.sentAttributes = [:]
            if record.lifecycle == .inserted, record.insertSent { record.lifecycle = .persisted }
            record.changed = record.changed.filter { record.unsent[$0] != nil }
            record.savedRelationships = record.savedRelationships.filter { record.changed.contains($0.key) }
            record.derived = []
        }
        for id in deleted {
            if let record = records[id] { detach(record, deleted: true) }
        }
        removeFromRelationships(deleted)
        let remaining = pending.filter { $0.hasChanges }
        // Changes made while the save was under way stay pending, their objects pinned: let go
        // of in between, an object only the context held (an insert whose caller kept no
        // reference) would be freed, and its values with it.
        let held = remaining.map(\.pinned)
        clearPending()
        withExtendedLifetime(held) {
            for record in remaining { markPending(record) }
        }
        flushedChanges = false
    }

    /// Takes a record out of the context: its object keeps the values it has, and reads its
    /// relationships as empty.
    func detach(_ record: ObjectRecord, deleted: Bool) {
        records[record.id] = nil
        record.isDetached = true
        record.pinned = nil
        if let object = record.object as? any PersistentModel {
            let state = object._$modelState
            state.isDeleted = deleted
            state.core = nil
        }
    }

    /// Discards the unsaved changes: inserted objects leave the context, changed properties
    /// read their saved values again, deleted objects are deleted no more.
    func discardChanges() {
        for record in pending {
            if record.lifecycle == .inserted {
                detach(record, deleted: false)
                continue
            }
            for name in record.changed {
                let property = record.info.property(name)
                guard !property.isRelationship else { continue }
                record.forEachObject { object in
                    property.metadata.writeSlot(object, nil)
                    property.metadata.notify(object)
                }
            }
            for (name, ids) in record.savedRelationships {
                record.relationships[name] = ids
                record.forEachObject { record.info.property(name).metadata.notify($0) }
            }
            record.changed = []
            record.unsent = [:]
            record.derived = []
            record.savedRelationships = [:]
            record.sentAttributes = [:]
            record.isMarkedDeleted = false
            record.deleteSent = false
        }
        clearPending()
    }

    /// Makes every pending change unsent again (its unit of work was lost).
    func markAllUnsent() {
        for record in pending {
            record.insertSent = false
            record.deleteSent = false
            record.sentAttributes = [:]
            for name in record.changed { record.unsent[name] = nextGeneration() }
        }
    }
}
