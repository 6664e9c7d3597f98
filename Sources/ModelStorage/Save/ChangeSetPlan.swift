import Foundation
import ModelCore

/// Step 2 of a save (docs/storage-semantics.md): a change set checked against the schema and
/// the stored objects (``SaveReads``), as a save (or an overlay) sees it: values converted to
/// their attributes' types, inserts completed with defaults, updates of saved objects only,
/// deletes of existing objects once each, and every relationship target resolved to a saved
/// object or an insert of the change set. The same on every backend.
///
/// A save fails on an update or a target that is gone (`notFound`); an overlay skips them.
public struct ChangeSetPlan: Sendable {
    public typealias Participant = SaveParticipant

    /// One relationship change, its targets resolved.
    public struct Link: Sendable {
        public enum Kind: Sendable {
            case toOne(Participant?)
            case toMany(added: [Participant], removed: [Participant])
        }

        public let relationship: ResolvedRelationship
        public let kind: Kind
    }

    public struct Insert: Sendable {
        public let id: PersistentIdentifier
        public let entity: ResolvedEntity
        /// The values given, converted (nil included).
        public let given: [String: Value]
        public let links: [Link]
        /// The names of the relationships given.
        public let relationshipNames: [String]

        /// The attribute and relationship names given, sorted (what an upsert records).
        public var changedProperties: [String] { (Array(given.keys) + relationshipNames).sorted() }

        /// Every attribute of the new object: the given value, else the default, else nil.
        public var attributes: [String: Value] {
            // Given are attributes of the entity only (``Builder/attributes(_:of:id:)``), so as
            // many are all of them.
            if given.count == entity.attributes.count { return given }
            var values: [String: Value] = [:]
            for attribute in entity.attributes {
                values[attribute.name] = given[attribute.name] ?? attribute.defaultValue ?? .null
            }
            return values
        }
    }

    public struct Update: Sendable {
        public let id: PersistentIdentifier
        public let ref: ObjectRef
        /// The stored object's entity.
        public let entity: ResolvedEntity
        public let attributes: [String: Value]
        public let links: [Link]
        public let changedProperties: [String]
    }

    public let inserts: [Insert]
    public let updates: [Update]
    /// Existing objects to delete, once each, in change-set order.
    public let deletes: [ObjectRef]

    /// Whether the plan writes nothing.
    public var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }

    /// Every identifier belongs to this store and names a known entity; inserts carry temporary
    /// identifiers (each once) of concrete entities, updates and deletes permanent ones.
    public static func checkIdentifiers(_ changes: ChangeSet, schema: ResolvedSchema, storeIdentifier: UUID)
        throws(ModelError)
    {
        var inserted = Set<PersistentIdentifier>(minimumCapacity: changes.inserts.count)
        // Inserts come in runs of one entity: its lookup is kept for the next insert.
        var last: ResolvedEntity?
        for index in changes.inserts.indices {
            // By index: a loop over the inserts would copy each one, tables and all.
            let id = changes.inserts[index].id
            let entity: ResolvedEntity
            if let last, last.name == id.entityName, id.storeIdentifier == storeIdentifier {
                entity = last
            } else {
                entity = try check(id, schema, storeIdentifier)
                last = entity
            }
            guard id.isTemporary else {
                throw ModelError(
                    .invalidIdentifier,
                    "\(id) is a permanent identifier: an insert carries a temporary one (…/t<uuid>); send changes to a saved object as an update",
                    context: ["uri": id.uriRepresentation])
            }
            guard !entity.isAbstract else {
                throw ModelError(
                    .invalidArgument,
                    "cannot insert \(id): entity '\(entity.name)' is abstract; insert one of its subentities (\(entity.descendants.dropFirst().joined(separator: ", ")))",
                    context: ["entity": entity.name])
            }
            guard inserted.insert(id).inserted else {
                throw ModelError(
                    .invalidArgument, "\(id) is inserted twice in one change set",
                    context: ["uri": id.uriRepresentation])
            }
        }
        for (id, action) in changes.updates.map({ ($0.id, "update") }) + changes.deletes.map({ ($0.id, "delete") }) {
            _ = try check(id, schema, storeIdentifier)
            guard !id.isTemporary else {
                throw ModelError(
                    .invalidIdentifier,
                    "cannot \(action) \(id): it is a temporary identifier of an object that was never saved",
                    context: ["uri": id.uriRepresentation])
            }
        }
        func checkTargets(_ relationships: [String: RelationshipChange]) throws(ModelError) {
            for change in relationships.values {
                switch change {
                case .toOne(let target): if let target { _ = try check(target, schema, storeIdentifier) }
                case .toMany(let added, let removed):
                    for target in added + removed { _ = try check(target, schema, storeIdentifier) }
                }
            }
        }
        for index in changes.inserts.indices where !changes.inserts[index].relationships.isEmpty {
            try checkTargets(changes.inserts[index].relationships)
        }
        for update in changes.updates { try checkTargets(update.relationships) }
    }

    private static func check(_ id: PersistentIdentifier, _ schema: ResolvedSchema, _ storeIdentifier: UUID)
        throws(ModelError) -> ResolvedEntity
    {
        guard id.storeIdentifier == storeIdentifier else {
            throw ModelError(
                .invalidIdentifier,
                "\(id) belongs to store \(id.storeIdentifier.uuidString.lowercased()), not to this store (\(storeIdentifier.uuidString.lowercased()))",
                context: ["uri": id.uriRepresentation])
        }
        return try schema.entity(id.entityName)
    }

    /// Checks values and relationship changes (after ``checkIdentifiers(_:schema:storeIdentifier:)``).
    public init(_ changes: ChangeSet, reads: some SaveReads, isOverlay: Bool) throws {
        let schema = reads.schema
        var builder = Builder(schema: schema, reads: reads, isOverlay: isOverlay)
        // Only relationship targets are looked up among the inserts.
        if changes.inserts.contains(where: { !$0.relationships.isEmpty })
            || changes.updates.contains(where: { !$0.relationships.isEmpty })
        {
            builder.insertEntities.reserveCapacity(changes.inserts.count)
            builder.insertIndex.reserveCapacity(changes.inserts.count)
            for insert in changes.inserts {
                builder.insertEntities[insert.id] = try schema.entity(insert.id.entityName)
                builder.insertIndex[insert.id] = builder.insertIndex.count
            }
        }
        var inserts: [Insert] = []
        inserts.reserveCapacity(changes.inserts.count)
        // Inserts come in runs of one entity: its lookup is kept for the next insert.
        var last: ResolvedEntity?
        for insert in changes.inserts {
            let entity: ResolvedEntity
            if let last, last.name == insert.id.entityName {
                entity = last
            } else {
                entity = try schema.entity(insert.id.entityName)
                last = entity
            }
            inserts.append(
                Insert(
                    id: insert.id, entity: entity,
                    given: try builder.attributes(insert.attributes, of: entity, id: insert.id),
                    links: try builder.links(insert.relationships, of: entity, id: insert.id),
                    relationshipNames: insert.relationships.isEmpty ? [] : Array(insert.relationships.keys)))
        }
        var updates: [Update] = []
        for update in changes.updates {
            guard let (ref, object) = try reads.existing(update.id), let entity = schema[object.entity] else {
                if isOverlay || update.keepsInversesOnly { continue }
                throw ModelError(
                    .notFound, "cannot update \(update.id): no such object in this store; it may have been deleted",
                    context: ["uri": update.id.uriRepresentation])
            }
            updates.append(
                Update(
                    id: update.id, ref: ref, entity: entity,
                    attributes: try builder.attributes(update.attributes, of: entity, id: update.id),
                    links: try builder.links(update.relationships, of: entity, id: update.id),
                    changedProperties: update.changedProperties))
        }
        var deletes: [ObjectRef] = []
        for delete in changes.deletes {
            if let (ref, _) = try reads.existing(delete.id), !deletes.contains(ref) { deletes.append(ref) }
        }
        self.inserts = inserts
        self.updates = updates
        self.deletes = deletes
    }
}
