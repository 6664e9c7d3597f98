import Foundation
import ModelCore

/// A change set checked against the schema and laid out for SQL: values converted to their
/// attributes' types, relationship changes split into the foreign keys and join-table rows this
/// side stores (the change set carries both sides; the other side is derived). Shared by saves
/// and overlays.
struct ChangeSetPlan {
    /// The stored side of an object's relationship changes.
    struct Links {
        /// Foreign-key columns to set (nil clears).
        var foreignKeys: [(name: String, target: PersistentIdentifier?)] = []
        /// Join-table rows to add and remove, with this object as the owning side.
        var joins: [(table: JoinTable, added: [PersistentIdentifier], removed: [PersistentIdentifier])] = []
        /// Every target named, with the relationship naming it (for existence and type checks).
        var targets: [(relationship: ResolvedRelationship, target: PersistentIdentifier)] = []
    }

    struct Insert {
        let id: PersistentIdentifier
        let entity: ResolvedEntity
        let values: [String: Value]
        let links: Links
        /// The attribute and relationship names the insert gives, sorted (for an upsert's history).
        let givenProperties: [String]
    }

    struct Update {
        let id: PersistentIdentifier
        let entity: ResolvedEntity
        let key: Int64?
        let values: [String: Value]
        let links: Links
        let expectedVersion: Int64?
        let changedProperties: [String]
    }

    struct Delete {
        let id: PersistentIdentifier
        let entity: ResolvedEntity
        let key: Int64?
        let expectedVersion: Int64?
    }

    let inserts: [Insert]
    let updates: [Update]
    let deletes: [Delete]

    /// Checks every identifier (this store, a known entity; temporary for inserts), attribute
    /// (known, of the right type) and relationship change (known, of the right cardinality).
    init(_ changes: ChangeSet, schema: ResolvedSchema, storeIdentifier: UUID) throws(ModelError) {
        func entityOf(_ id: PersistentIdentifier) throws(ModelError) -> ResolvedEntity {
            guard id.storeIdentifier == storeIdentifier else {
                throw ModelError(.invalidIdentifier, "\(id) belongs to another store, not to this one (\(storeIdentifier.uuidString.lowercased()))",
                                 context: ["uri": id.uriRepresentation])
            }
            return try schema.entity(id.entityName)
        }
        func values(_ given: [String: Value], of entity: ResolvedEntity) throws(ModelError) -> [String: Value] {
            var converted: [String: Value] = [:]
            for (name, value) in given {
                guard let attribute = entity.attribute(name) else { throw ModelError.unknownProperty(name, entity: entity.name) }
                do {
                    converted[name] = try value.converted(to: attribute.type)
                } catch {
                    throw ModelError(.typeMismatch, "\(entity.name).\(name) is \(attribute.type.rawValue), not \(value.debugText)",
                                     context: ["entity": entity.name, "attribute": name, "expected": attribute.type.rawValue])
                }
            }
            return converted
        }
        func links(_ given: [String: RelationshipChange], of entity: ResolvedEntity) throws(ModelError) -> Links {
            var links = Links()
            for (name, change) in given.sorted(by: { $0.key < $1.key }) {
                guard let relationship = entity.relationship(name) else { throw ModelError.unknownProperty(name, entity: entity.name) }
                switch (change, relationship.isToMany) {
                case (.toOne(let target), false):
                    if let target {
                        _ = try entityOf( target)
                        links.targets.append((relationship, target))
                    }
                    if relationship.storage == .foreignKey { links.foreignKeys.append((name, target)) }
                case (.toMany(let added, let removed), true):
                    for target in added + removed {
                        _ = try entityOf( target)
                        links.targets.append((relationship, target))
                    }
                    if case .joinTable(let table, true) = relationship.storage {
                        links.joins.append((table, added, removed))
                    }
                default:
                    throw ModelError(.invalidArgument,
                                     "\(entity.name).\(name) is a \(relationship.isToMany ? "to-many" : "to-one") relationship; change it with \(relationship.isToMany ? ".toMany(added:removed:)" : ".toOne(_:)")",
                                     context: ["entity": entity.name, "relationship": name])
                }
            }
            return links
        }

        var inserts: [Insert] = []
        for insert in changes.inserts {
            let resolved = try entityOf( insert.id)
            guard insert.id.isTemporary else {
                throw ModelError(.invalidArgument, "inserted object \(insert.id) must carry a temporary identifier (t<uuid>)",
                                 context: ["uri": insert.id.uriRepresentation])
            }
            inserts.append(Insert(id: insert.id, entity: resolved, values: try values(insert.attributes, of: resolved),
                                  links: try links(insert.relationships, of: resolved),
                                  givenProperties: (Array(insert.attributes.keys) + Array(insert.relationships.keys)).sorted()))
        }
        var updates: [Update] = []
        for update in changes.updates {
            let resolved = try entityOf( update.id)
            updates.append(Update(id: update.id, entity: resolved, key: update.id.primaryKey,
                                  values: try values(update.attributes, of: resolved),
                                  links: try links(update.relationships, of: resolved),
                                  expectedVersion: update.expectedVersion, changedProperties: update.changedProperties))
        }
        var deletes: [Delete] = []
        for delete in changes.deletes {
            deletes.append(Delete(id: delete.id, entity: try entityOf( delete.id), key: delete.id.primaryKey,
                                  expectedVersion: delete.expectedVersion))
        }
        self.inserts = inserts
        self.updates = updates
        self.deletes = deletes
    }
}
