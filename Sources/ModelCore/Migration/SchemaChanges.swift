/// What turns a store of one schema into a store of another, worked out from the two schemas
/// alone (no data): entities and attributes matched by name or by `originalName`, and each
/// difference sorted into what an inferred (lightweight) migration does and what it cannot do.
/// ModelStorage's `MigrationPlanner` then counts what each change touches in a store's data.
public struct SchemaChanges: Hashable, Sendable {
    /// An entity of the new schema and the old entity it continues, with what changes in it.
    public struct EntityChanges: Hashable, Sendable {
        /// The entity's name in the new schema.
        public let name: String
        /// Its name in the old schema (the same unless renamed).
        public let oldName: String
        /// Attributes the entity declares that the old one did not have (not renames).
        public internal(set) var addedAttributes: [AttributeDescription] = []
        /// Old attributes the new entity does not keep, by their old names.
        public internal(set) var removedAttributes: [String] = []
        /// Attributes renamed through `originalName`: old name → new name.
        public internal(set) var renamedAttributes: [Rename] = []
        /// Optional attributes made required (their new descriptions; a default fills nils).
        public internal(set) var requiredAttributes: [AttributeDescription] = []
        /// Required attributes made optional (new names).
        public internal(set) var optionalAttributes: [String] = []
        /// Attributes whose default changed: no stored value changes.
        public internal(set) var changedDefaults: [String] = []
        public internal(set) var addedIndexes: [[String]] = []
        public internal(set) var removedIndexes: [[String]] = []
        /// Unique constraints added (new attribute names); existing data must satisfy them.
        public internal(set) var addedUniqueConstraints: [[String]] = []
        public internal(set) var removedUniqueConstraints: [[String]] = []
        /// Relationships the entity declares that the old one did not have.
        public internal(set) var addedRelationships: [String] = []
        /// Old relationships the new entity does not keep.
        public internal(set) var removedRelationships: [String] = []
        /// Relationships whose rules changed: delete rule, inverse, optionality, counts.
        public internal(set) var changedRelationships: [String] = []

        /// Whether nothing changes in this entity but (perhaps) its name.
        public var isUnchanged: Bool {
            addedAttributes.isEmpty && removedAttributes.isEmpty && renamedAttributes.isEmpty
                && requiredAttributes.isEmpty && optionalAttributes.isEmpty && changedDefaults.isEmpty
                && addedIndexes.isEmpty && removedIndexes.isEmpty && addedUniqueConstraints.isEmpty
                && removedUniqueConstraints.isEmpty && addedRelationships.isEmpty
                && removedRelationships.isEmpty && changedRelationships.isEmpty
        }
    }

    /// A name that changes: `old` in the old schema is `new` in the new one.
    public struct Rename: Hashable, Sendable {
        public let old: String
        public let new: String

        public init(old: String, new: String) {
            self.old = old
            self.new = new
        }
    }

    /// Entities of the new schema with no old counterpart.
    public internal(set) var addedEntities: [String] = []
    /// Old entities with no new counterpart (their objects go).
    public internal(set) var removedEntities: [String] = []
    /// Entities renamed through `originalName`.
    public internal(set) var renamedEntities: [Rename] = []
    /// Every entity of the new schema that continues an old one, in the new schema's order.
    public internal(set) var entities: [EntityChanges] = []
    /// What an inferred migration cannot do, each with why: a staged migration is needed.
    public internal(set) var unsupported: [String] = []
    /// Renames that cannot be told from what the new schema keeps (an `originalName` the new
    /// schema still uses), each with what to do instead.
    public internal(set) var ambiguousRenames: [String] = []
    /// What an inferred migration cannot do if the entity named holds objects (moving an entity
    /// in its hierarchy, making it abstract): entity (old name) → why.
    public internal(set) var unsupportedWithObjects: [Condition] = []

    /// A change allowed only while `entity` (an old entity name) holds no objects.
    public struct Condition: Hashable, Sendable {
        public let entity: String
        public let reason: String
    }

    /// Whether the two schemas store the same data the same way (only names of nothing, or
    /// declaration order, differ).
    public var isEmpty: Bool {
        addedEntities.isEmpty && removedEntities.isEmpty && renamedEntities.isEmpty
            && entities.allSatisfy(\.isUnchanged) && unsupported.isEmpty && unsupportedWithObjects.isEmpty
            && ambiguousRenames.isEmpty
    }

    /// The changes from `old` to `new`.
    public init(from old: ResolvedSchema, to new: ResolvedSchema) {
        let oldNames = Set(old.entityNames)
        var continued: [String: String] = [:] // new name → old name
        for entity in new.schema.entities {
            if let original = entity.originalName, original != entity.name, oldNames.contains(original),
                !new.entityNames.contains(original)
            {
                continued[entity.name] = original
                renamedEntities.append(Rename(old: original, new: entity.name))
            } else if oldNames.contains(entity.name) {
                continued[entity.name] = entity.name
            } else {
                addedEntities.append(entity.name)
            }
            if let original = entity.originalName, original != entity.name, oldNames.contains(original),
                new.entityNames.contains(original)
            {
                ambiguousRenames.append(
                    "entity \(entity.name) names \(original) as its original name, but the new schema has an entity \(original) too, so it cannot continue it: rename in two steps (first \(original) to a name the new schema does not use)"
                )
            }
        }
        let kept = Set(continued.values)
        removedEntities = old.entityNames.filter { !kept.contains($0) }
        for rename in renamedEntities where removedEntities.contains(rename.new) {
            ambiguousRenames.append(
                "entity \(rename.old) cannot be renamed \(rename.new), the name of the entity this migration removes: the URIs of \(rename.new)'s objects would come to name \(rename.old)'s; give it another name"
            )
        }
        for entity in new.schema.entities {
            guard let oldName = continued[entity.name], let before = old.schema.entity(named: oldName) else { continue }
            entities.append(
                Self.changes(
                    of: entity, from: before, continued: continued, old: old, new: new,
                    unsupported: &unsupported, conditions: &unsupportedWithObjects, ambiguous: &ambiguousRenames))
        }
    }

    private static func changes(
        of after: EntityDescription, from before: EntityDescription, continued: [String: String],
        old: ResolvedSchema, new: ResolvedSchema, unsupported: inout [String], conditions: inout [Condition],
        ambiguous: inout [String]
    ) -> EntityChanges {
        var changes = EntityChanges(name: after.name, oldName: before.name)
        let oldSuper = before.superentity
        let newSuper = after.superentity.map { continued[$0] ?? "+\($0)" }
        if oldSuper != newSuper {
            conditions.append(
                Condition(
                    entity: before.name,
                    reason:
                        "\(after.name) moves in its hierarchy (superentity \(before.superentity ?? "none") → \(after.superentity ?? "none")): its objects would change tables"
                ))
        }
        if !before.isAbstract && after.isAbstract {
            conditions.append(
                Condition(
                    entity: before.name, reason: "\(after.name) becomes abstract: its own objects would have no entity")
            )
        }

        // Attributes: by originalName first, then by name.
        let oldAttributes = Dictionary(before.attributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var matched: [String: AttributeDescription] = [:] // new name → old attribute
        for attribute in after.attributes {
            if let original = attribute.originalName, original != attribute.name, let source = oldAttributes[original],
                !after.attributes.contains(where: { $0.name == original })
            {
                matched[attribute.name] = source
                changes.renamedAttributes.append(Rename(old: original, new: attribute.name))
            } else if let source = oldAttributes[attribute.name] {
                matched[attribute.name] = source
            } else {
                changes.addedAttributes.append(attribute)
            }
            if let original = attribute.originalName, original != attribute.name, oldAttributes[original] != nil,
                after.attributes.contains(where: { $0.name == original })
            {
                ambiguous.append(
                    "\(after.name).\(attribute.name) names \(original) as its original name, but \(after.name) keeps an attribute \(original), so it cannot continue it: rename in two steps (first \(original) to a name the new schema does not use)"
                )
            }
        }
        let keptAttributes = Set(matched.values.map(\.name))
        changes.removedAttributes = before.attributes.map(\.name).filter { !keptAttributes.contains($0) }
        for rename in changes.renamedAttributes where changes.removedAttributes.contains(rename.new) {
            ambiguous.append(
                "\(after.name).\(rename.new) continues \(rename.old) under the name of the attribute \(rename.new) this migration removes: migrate in two steps (first remove \(rename.new), then rename \(rename.old) to it)"
            )
        }
        for attribute in after.attributes {
            guard let source = matched[attribute.name] else { continue }
            if source.type != attribute.type {
                unsupported.append(
                    "\(after.name).\(attribute.name) changes type (\(source.type.rawValue) → \(attribute.type.rawValue)): stored values would need converting"
                )
                continue
            }
            if source.isOptional && !attribute.isOptional { changes.requiredAttributes.append(attribute) }
            if !source.isOptional && attribute.isOptional { changes.optionalAttributes.append(attribute.name) }
            if source.defaultValue != attribute.defaultValue { changes.changedDefaults.append(attribute.name) }
        }

        // Indexes and unique constraints, in new names.
        let renamed = Dictionary(changes.renamedAttributes.map { ($0.old, $0.new) }, uniquingKeysWith: { a, _ in a })
        func inNewNames(_ names: [String]) -> [String] { names.map { renamed[$0] ?? $0 } }
        let oldIndexes = Set(before.indexes.map(inNewNames)), newIndexes = Set(after.indexes)
        changes.addedIndexes = after.indexes.filter { !oldIndexes.contains($0) }
        changes.removedIndexes = before.indexes.map(inNewNames).filter { !newIndexes.contains($0) }
        let oldUnique = Set(before.uniqueConstraints.map(inNewNames)), newUnique = Set(after.uniqueConstraints)
        changes.addedUniqueConstraints = after.uniqueConstraints.filter { !oldUnique.contains($0) }
        changes.removedUniqueConstraints = before.uniqueConstraints.map(inNewNames).filter { !newUnique.contains($0) }

        // Relationships, by name; a destination that is another entity is another relationship.
        let oldRelationships = Dictionary(before.relationships.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newRelationshipNames = Set(after.relationships.map(\.name))
        for relationship in after.relationships {
            guard let source = oldRelationships[relationship.name] else {
                changes.addedRelationships.append(relationship.name)
                continue
            }
            let sameDestination = continued[relationship.destination] == source.destination
            if !sameDestination || source.isToMany != relationship.isToMany {
                unsupported.append(
                    "\(after.name).\(relationship.name) changes its destination or cardinality (\(Self.shape(source)) → \(Self.shape(relationship))): stored references would need converting"
                )
                continue
            }
            if source.deleteRule != relationship.deleteRule || source.inverse != relationship.inverse
                || source.isOptional != relationship.isOptional || source.minCount != relationship.minCount
                || source.maxCount != relationship.maxCount
            {
                changes.changedRelationships.append(relationship.name)
            }
        }
        changes.removedRelationships = before.relationships.map(\.name).filter { !newRelationshipNames.contains($0) }
        return changes
    }

    private static func shape(_ relationship: RelationshipDescription) -> String {
        "\(relationship.isToMany ? "to-many" : "to-one") \(relationship.destination)"
    }
}
