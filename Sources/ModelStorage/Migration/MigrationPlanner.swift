import ModelCore

/// The one inferred-migration algorithm every backend uses: from the store's schema, the one
/// asked for and the store's data (``MigrationReads``, in the migration's transaction), the
/// ``MigrationPlan`` — each step with what it touches, and each refusal with what to do
/// instead. The backend then changes its storage as the plan's ``SchemaChanges`` say; what is
/// allowed and why is decided here, once.
public enum MigrationPlanner {
    /// How many objects a refusal names by URI.
    static let namedObjects = 5

    public static func plan<Reads: MigrationReads>(
        from old: ResolvedSchema, to new: ResolvedSchema, reads: Reads, allowDataLoss: Bool
    ) throws -> MigrationPlan {
        let changes = SchemaChanges(from: old, to: new)
        var planner = MigrationPlanning(old: old, new: new, reads: reads, allowDataLoss: allowDataLoss)
        planner.plan.refusals += changes.unsupported.map { "\($0); this needs a staged migration" }
        planner.plan.refusals += changes.ambiguousRenames
        for condition in changes.unsupportedWithObjects {
            let objects = try planner.count(condition.entity, exactly: true)
            if objects > 0 {
                planner.plan.refusals.append(
                    "\(condition.reason), and it has \(objects) object(s); this needs a staged migration")
            }
        }
        for name in changes.addedEntities {
            planner.add(.addEntity, name, "add entity \(name)", objects: 0)
        }
        for rename in changes.renamedEntities {
            let objects = try planner.count(rename.old, exactly: true)
            planner.add(.renameEntity, rename.new, "rename entity \(rename.old) to \(rename.new)", objects: objects)
        }
        let references = planner.referencesIntoRemoved(changes)
        for name in changes.removedEntities { try planner.planRemoval(of: name, references: references) }
        try planner.checkRequiredReferences(references)
        for entity in changes.entities { try planner.plan(entity) }
        return planner.plan
    }
}

extension MigrationPlanner {
    /// The plan between two schemas of one stored shape (one version hash): nothing to do, or
    /// refused when a rename hint cannot be followed (an `originalName` the new schema still
    /// uses, as two attributes swapping names), rather than taken as nothing asked.
    public static func planSameShape(from old: ResolvedSchema, to new: ResolvedSchema) -> MigrationPlan {
        var plan = MigrationPlan(fromVersion: old.versionHash, toVersion: new.versionHash)
        plan.refusals = SchemaChanges(from: old, to: new).ambiguousRenames
        return plan
    }
}

/// One plan being worked out.
struct MigrationPlanning<Reads: MigrationReads> {
    let old: ResolvedSchema
    let new: ResolvedSchema
    let reads: Reads
    let allowDataLoss: Bool
    var plan: MigrationPlan

    init(old: ResolvedSchema, new: ResolvedSchema, reads: Reads, allowDataLoss: Bool) {
        self.old = old
        self.new = new
        self.reads = reads
        self.allowDataLoss = allowDataLoss
        plan = MigrationPlan(fromVersion: old.versionHash, toVersion: new.versionHash)
    }

    func count(_ entity: String, where predicate: String? = nil, exactly: Bool = false) throws -> Int {
        try reads.count(entity, where: predicate, exactly: exactly, in: old)
    }

    func named(_ entity: String, where predicate: String) throws -> String {
        let uris = try reads.uris(entity, where: predicate, limit: MigrationPlanner.namedObjects, in: old)
        return uris.joined(separator: ", ")
    }

    mutating func add(
        _ kind: MigrationPlan.Step.Kind, _ entity: String, _ detail: String, objects: Int, losesData: Bool = false
    ) {
        plan.steps.append(.init(kind: kind, entity: entity, detail: detail, objects: objects, losesData: losesData))
        if losesData && !allowDataLoss {
            plan.refusals.append("\(entity): \(detail) (\(objects) object(s)); allow data loss to do it")
        }
    }

    mutating func refuse(_ reason: String) { plan.refusals.append(reason) }

    mutating func plan(_ entity: SchemaChanges.EntityChanges) throws {
        guard !entity.isUnchanged else { return }
        let name = entity.name, oldName = entity.oldName
        let objects = try count(oldName)
        let oldAttribute = Dictionary(
            entity.renamedAttributes.map { ($0.new, $0.old) }, uniquingKeysWith: { a, _ in a })
        func stored(_ attribute: String) -> String { oldAttribute[attribute] ?? attribute }

        for attribute in entity.addedAttributes {
            let type = attribute.type.rawValue + (attribute.isOptional ? "?" : "")
            if let value = attribute.defaultValue {
                add(
                    .addAttribute, name,
                    "add \(attribute.name) (\(type)): existing objects get \(value.textForm ?? "its default")",
                    objects: objects)
            } else if attribute.isOptional {
                add(.addAttribute, name, "add \(attribute.name) (\(type)): existing objects get nil", objects: objects)
            } else {
                add(.addAttribute, name, "add \(attribute.name) (\(type))", objects: objects)
                if objects > 0 {
                    refuse(
                        "\(name).\(attribute.name) is required and has no default, and \(objects) existing object(s) would have no value: make it optional or give it a default"
                    )
                }
            }
        }
        for attribute in entity.removedAttributes {
            let holding = try count(oldName, where: "\(attribute) != nil")
            add(
                .removeAttribute, name, "remove \(attribute)" + (holding > 0 ? ": its values are deleted" : ""),
                objects: holding, losesData: holding > 0)
        }
        for rename in entity.renamedAttributes {
            add(
                .renameAttribute, name, "rename \(rename.old) to \(rename.new) (values kept in place)", objects: objects
            )
        }
        for attribute in entity.requiredAttributes {
            let empty = try count(oldName, where: "\(stored(attribute.name)) == nil")
            if let value = attribute.defaultValue {
                add(
                    .requireAttribute, name,
                    "make \(attribute.name) required: objects holding nil get \(value.textForm ?? "its default")",
                    objects: empty)
            } else {
                add(.requireAttribute, name, "make \(attribute.name) required", objects: empty)
                if empty > 0 {
                    refuse(
                        "\(name).\(attribute.name) becomes required, but \(empty) object(s) hold nil (\(try named(oldName, where: "\(stored(attribute.name)) == nil"))): give it a default, or set their values first"
                    )
                }
            }
        }
        for attribute in entity.optionalAttributes {
            add(.relaxAttribute, name, "make \(attribute) optional", objects: 0)
        }
        for attribute in entity.changedDefaults {
            add(.changeDefault, name, "change the default of \(attribute) (stored values unchanged)", objects: 0)
        }
        for index in entity.removedIndexes {
            add(.removeIndex, name, "remove index (\(index.joined(separator: ", ")))", objects: objects)
        }
        for index in entity.addedIndexes {
            add(.addIndex, name, "add index (\(index.joined(separator: ", ")))", objects: objects)
        }
        for constraint in entity.removedUniqueConstraints {
            add(
                .removeUniqueConstraint, name, "remove unique constraint (\(constraint.joined(separator: ", ")))",
                objects: 0)
        }
        for constraint in entity.addedUniqueConstraints {
            add(
                .addUniqueConstraint, name, "add unique constraint (\(constraint.joined(separator: ", ")))",
                objects: objects)
        }
        try checkUniqueness(of: entity)
        for relationship in entity.removedRelationships {
            guard let old = old[oldName]?.relationship(relationship) else { continue }
            let holding = try count(
                oldName, where: old.isToMany ? "\(relationship).@count > 0" : "\(relationship) != nil")
            add(
                .removeRelationship, name,
                "remove relationship \(relationship)" + (holding > 0 ? ": its references are deleted" : ""),
                objects: holding, losesData: holding > 0)
        }
        for relationship in entity.addedRelationships {
            guard let added = new[name]?.relationship(relationship) else { continue }
            add(
                .addRelationship, name,
                "add relationship \(relationship) (\(added.isToMany ? "to-many" : "to-one") \(added.destination))",
                objects: objects)
            let required = added.isToMany ? (added.minCount ?? 0) > 0 : !added.isOptional
            if required && objects > 0 {
                refuse(
                    "\(name).\(relationship) is required, and \(objects) existing object(s) would have no related object: make it optional (or its minimum 0)"
                )
            }
        }
        for relationship in entity.changedRelationships {
            try plan(changed: relationship, of: entity, objects: objects)
        }
    }

    /// A relationship whose rules change: the new bounds must hold for the stored objects.
    private mutating func plan(changed relationship: String, of entity: SchemaChanges.EntityChanges, objects: Int)
        throws
    {
        guard let before = old[entity.oldName]?.relationship(relationship),
            let after = new[entity.name]?.relationship(relationship)
        else { return }
        if before.storage.kind != after.storage.kind {
            refuse(
                "\(entity.name).\(relationship) changes how its references are stored (\(before.storage.kind) → \(after.storage.kind), as its inverse changes); this needs a staged migration"
            )
            return
        }
        add(
            .changeRelationship, entity.name, "change relationship \(relationship) (delete rule, inverse or bounds)",
            objects: objects)
        var violations: [String] = []
        if !after.isToMany, before.isOptional, !after.isOptional { violations.append("\(relationship) == nil") }
        if after.isToMany, let min = after.minCount, min > 0, min > (before.minCount ?? 0) {
            violations.append("\(relationship).@count < \(min)")
        }
        if after.isToMany, let max = after.maxCount, max > 0, max < (before.maxCount ?? Int.max) || before.maxCount == 0
        {
            violations.append("\(relationship).@count > \(max)")
        }
        guard !violations.isEmpty else { return }
        let predicate = violations.joined(separator: " OR ")
        let violating = try count(entity.oldName, where: predicate)
        if violating > 0 {
            refuse(
                "\(entity.name).\(relationship): \(violating) object(s) break its new bounds (\(try named(entity.oldName, where: predicate))); change them first"
            )
        }
    }
}

extension RelationshipStorage {
    /// The kind of storage, without its details: what a migration cannot change in place.
    var kind: String {
        switch self {
        case .foreignKey: "foreign key"
        case .inverseForeignKey: "the other side's foreign key"
        case .joinTable: "join table"
        }
    }
}
