import ModelCore

/// A context's working view of one object: its values with the context's pending changes applied.
struct ObjectState: Sendable {
    var id: PersistentIdentifier
    /// The stored version this view is based on; nil for an object inserted by the context.
    var version: Int64?
    var attributes: [String: Value]
    var toOne: [String: PersistentIdentifier?]
    var toMany: [String: Set<PersistentIdentifier>]

    init(
        id: PersistentIdentifier, version: Int64?, attributes: [String: Value],
        toOne: [String: PersistentIdentifier?] = [:], toMany: [String: Set<PersistentIdentifier>] = [:]
    ) {
        self.id = id
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
    }

    /// The view of a stored snapshot (which must carry every property).
    init(_ snapshot: ObjectSnapshot) {
        var toOne: [String: PersistentIdentifier?] = [:]
        var toMany: [String: Set<PersistentIdentifier>] = [:]
        for (name, value) in snapshot.relationships {
            switch value {
            case .toOne(let target): toOne[name] = .some(target)
            case .toMany(let targets): toMany[name] = Set(targets)
            }
        }
        self.init(
            id: snapshot.id, version: snapshot.version, attributes: snapshot.attributes, toOne: toOne, toMany: toMany)
    }

    /// The targets of `relationship`, whichever its cardinality.
    func targets(of relationship: ResolvedRelationship) -> Set<PersistentIdentifier> {
        if relationship.isToMany { return toMany[relationship.name] ?? [] }
        return (toOne[relationship.name] ?? nil).map { [$0] } ?? []
    }

    /// The view as a snapshot: to-many targets in key order, new objects after saved ones.
    func snapshot(version: Int64, entity: ResolvedEntity) -> ObjectSnapshot {
        var relationships: [String: RelationshipValue] = [:]
        for relationship in entity.relationships {
            if relationship.isToMany {
                relationships[relationship.name] = .toMany(Self.keyOrder(toMany[relationship.name] ?? []))
            } else {
                relationships[relationship.name] = .toOne(toOne[relationship.name] ?? nil)
            }
        }
        var values: [String: Value] = [:]
        for attribute in entity.attributes { values[attribute.name] = attributes[attribute.name] ?? .null }
        return ObjectSnapshot(id: id, version: version, attributes: values, relationships: relationships)
    }

    /// Identifiers in primary-key order; temporary ones last, in a stable order.
    static func keyOrder(_ ids: Set<PersistentIdentifier>) -> [PersistentIdentifier] {
        ids.sorted { a, b in
            switch (a.key, b.key) {
            case (.permanent(let x), .permanent(let y)): x < y
            case (.permanent, .temporary): true
            case (.temporary, .permanent): false
            case (.temporary(let x), .temporary(let y)): x.uuidString < y.uuidString
            }
        }
    }
}
