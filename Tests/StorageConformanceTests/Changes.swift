import Foundation
import ModelCore

/// Builds a change set by hand, as the engine would: ``link(_:_:_:)`` and ``unlink(_:_:_:)``
/// write both sides of a relationship change, so backends find the side they store.
struct Changes {
    let schema: ResolvedSchema
    let storeIdentifier: UUID
    /// The change set built so far.
    var set: ChangeSet

    init(schema: ResolvedSchema, storeIdentifier: UUID, author: String? = nil, policy: UniquenessPolicy = .error) {
        self.schema = schema
        self.storeIdentifier = storeIdentifier
        self.set = ChangeSet(author: author, uniquenessPolicy: policy)
    }

    /// Inserts an object of `entity`; returns its temporary identifier (`temporaryKey`, or a new one).
    @discardableResult
    mutating func insert(_ entity: String, _ attributes: [String: Value] = [:], temporaryKey: UUID = UUID())
        -> PersistentIdentifier
    {
        let id = PersistentIdentifier(
            storeIdentifier: storeIdentifier, entityName: entity, key: .temporary(temporaryKey))
        set.inserts.append(InsertedObject(id: id, attributes: attributes))
        return id
    }

    /// Changes attributes of a saved object.
    mutating func update(_ id: PersistentIdentifier, _ attributes: [String: Value] = [:], expectedVersion: Int64? = nil)
    {
        let index = updateIndex(id)
        set.updates[index].attributes.merge(attributes) { _, new in new }
        if let expectedVersion { set.updates[index].expectedVersion = expectedVersion }
    }

    /// Deletes a saved object.
    mutating func delete(_ id: PersistentIdentifier, expectedVersion: Int64? = nil) {
        set.deletes.append(DeletedObject(id: id, expectedVersion: expectedVersion))
    }

    /// Relates `source` to `target` through `relationship`, and `target` to `source` through the
    /// inverse, if there is one.
    mutating func link(_ source: PersistentIdentifier, _ relationship: String, _ target: PersistentIdentifier) {
        record(source, relationship, target, adding: true)
        if let inverse = inverse(of: source, relationship) { record(target, inverse, source, adding: true) }
    }

    /// Undoes ``link(_:_:_:)``: both sides.
    mutating func unlink(_ source: PersistentIdentifier, _ relationship: String, _ target: PersistentIdentifier) {
        record(source, relationship, target, adding: false)
        if let inverse = inverse(of: source, relationship) { record(target, inverse, source, adding: false) }
    }

    /// Sets one side of a relationship only, exactly as given (for tests of what backends store).
    mutating func setRelationship(_ id: PersistentIdentifier, _ name: String, _ change: RelationshipChange) {
        if let index = set.inserts.firstIndex(where: { $0.id == id }) {
            set.inserts[index].relationships[name] = change
        } else {
            set.updates[updateIndex(id)].relationships[name] = change
        }
    }

    private func inverse(of source: PersistentIdentifier, _ relationship: String) -> String? {
        schema[source.entityName]?.relationship(relationship)?.inverse
    }

    private mutating func record(
        _ id: PersistentIdentifier, _ name: String, _ target: PersistentIdentifier, adding: Bool
    ) {
        let isToMany = schema[id.entityName]?.relationship(name)?.isToMany ?? false
        let current = currentChange(id, name)
        let change: RelationshipChange
        if isToMany {
            var added: [PersistentIdentifier] = [], removed: [PersistentIdentifier] = []
            if case .toMany(let a, let r)? = current { added = a; removed = r }
            if adding {
                removed.removeAll { $0 == target }
                added.append(target)
            } else {
                added.removeAll { $0 == target }
                removed.append(target)
            }
            change = .toMany(added: added, removed: removed)
        } else {
            change = .toOne(adding ? target : nil)
        }
        setRelationship(id, name, change)
    }

    private func currentChange(_ id: PersistentIdentifier, _ name: String) -> RelationshipChange? {
        if let insert = set.inserts.first(where: { $0.id == id }) { return insert.relationships[name] }
        return set.updates.first(where: { $0.id == id })?.relationships[name]
    }

    private mutating func updateIndex(_ id: PersistentIdentifier) -> Int {
        if let index = set.updates.firstIndex(where: { $0.id == id }) { return index }
        set.updates.append(UpdatedObject(id: id))
        return set.updates.count - 1
    }
}
