import Foundation
import ModelCore
import ModelStorage

extension MemoryStore {
    /// Migrates the store to `schema` (see ``StorageBackend/migrate(to:options:)``): plans
    /// against the rows, then builds the new state from the old one and swaps it in, so a
    /// refusal or an error leaves the old state untouched.
    public func migrate(to schema: Schema, options: MigrationOptions) throws -> MigrationPlan {
        try checkWritable()
        let new = try ResolvedSchema.resolved(schema)
        let old = state.schema
        if old.versionHash == new.versionHash {
            let same = MigrationPlanner.planSameShape(from: old, to: new)
            if options.dryRun { return same }
            guard same.isAllowed else { throw same.refusalError }
            state.schema = new
            return same
        }
        let reads = MemoryMigrationReads(reader: StoreReader(state: state, storeIdentifier: storeIdentifier))
        let plan = try MigrationPlanner.plan(from: old, to: new, reads: reads, allowDataLoss: options.allowDataLoss)
        if options.dryRun { return plan }
        guard plan.isAllowed else { throw plan.refusalError }
        var migrated = state.migrated(to: new, changes: SchemaChanges(from: old, to: new))
        migrated.lastToken += 1
        migrated.history.append(
            HistoryTransaction(
                token: HistoryToken(migrated.lastToken), timestamp: clock(), author: options.author, changes: [],
                schemaChange: SchemaVersionChange(from: old.versionHash, to: new.versionHash)))
        state = migrated
        return plan
    }
}

/// The planner's reads: the store's rows in the old schema.
private struct MemoryMigrationReads: MigrationReads {
    let reader: StoreReader

    func fetch(_ descriptor: FetchDescriptor) throws -> FetchResult { try reader.fetch(descriptor) }
    func aggregate(_ descriptor: AggregateDescriptor) throws -> [AggregateRow] { try reader.aggregate(descriptor) }
}

extension MemoryState {
    /// The same facts laid out for `new`, as the SQLite backend's tables would be after the
    /// migration: entities and attributes renamed, removed ones gone (with their objects and
    /// the references to them), added attributes holding their default or nil, required ones
    /// filled with their default; keys, versions and history kept.
    func migrated(to new: ResolvedSchema, changes: SchemaChanges) -> MemoryState {
        let entityName = Dictionary(changes.entities.map { ($0.oldName, $0.name) }, uniquingKeysWith: { a, _ in a })
        let byNewName = Dictionary(changes.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var result = MemoryState(schema: new)
        // As every backend keeps them (RetiredNameKeys): no name draws a key it drew before.
        result.sequences = sequences
        for raise in RetiredNameKeys.raises(from: schema, to: new, changes: changes) {
            guard let key = result.sequences[raise.keysOf] else { continue }
            result.sequences[raise.name] = max(result.sequences[raise.name] ?? 0, key)
        }
        // What changes for each entity's objects, worked out once per entity, not per row.
        var rules: [String: RowRules] = [:]
        func rulesFor(_ entity: ResolvedEntity) -> RowRules {
            if let made = rules[entity.name] { return made }
            let made = RowRules(entity, changes: self.changes(for: entity, in: byNewName))
            rules[entity.name] = made
            return made
        }
        var moved: [ObjectRef: ObjectRef] = [:]
        for (root, rows) in tables {
            for (key, row) in rows {
                guard let name = entityName[row.entity], let entity = new[name] else { continue }
                let rule = rulesFor(entity)
                var attributes: [String: Value] = [:]
                for (attribute, value) in row.attributes {
                    let newName = rule.renamed[attribute] ?? attribute
                    if entity.attribute(newName) != nil { attributes[newName] = value }
                }
                for (attribute, value) in rule.fills where attributes[attribute] == nil {
                    attributes[attribute] = value
                }
                let foreignKeys = row.foreignKeys.filter { entity.relationship($0.key)?.storage == .foreignKey }
                let ref = ObjectRef(root: entity.root, key: key)
                moved[ObjectRef(root: root, key: key)] = ref
                result.write(
                    ref, Row(entity: name, version: row.version, attributes: attributes, foreignKeys: foreignKeys))
            }
        }
        // References to objects that went with their entity are cleared.
        for (root, rows) in result.tables {
            for (key, row) in rows where !row.foreignKeys.isEmpty {
                var cleaned = row
                cleaned.foreignKeys = row.foreignKeys.filter { name, target in
                    guard let destination = new[row.entity]?.relationship(name).flatMap({ new[$0.destination] }) else {
                        return false
                    }
                    return result.row(ObjectRef(root: destination.root, key: target)) != nil
                }
                if cleaned.foreignKeys != row.foreignKeys { result.write(ObjectRef(root: root, key: key), cleaned) }
            }
        }
        for join in new.joinTables {
            let oldOwner = entityName.first { $0.value == join.ownerEntity }?.key
            guard
                let before = schema.joinTables.first(where: {
                    $0.ownerEntity == oldOwner && $0.ownerRelationship == join.ownerRelationship
                }),
                let rows = joins[before.name]
            else { continue }
            for (source, targets) in rows.bySource {
                guard let from = moved[ObjectRef(root: before.sourceRoot, key: source)], from.root == join.sourceRoot
                else { continue }
                for target in targets {
                    guard let to = moved[ObjectRef(root: before.targetRoot, key: target)], to.root == join.targetRoot
                    else { continue }
                    result.setJoin(join.name, source: from.key, target: to.key, present: true)
                }
            }
        }
        result.lastToken = lastToken
        result.history = history.map { transaction in
            var transaction = transaction
            transaction.changes = transaction.changes.map { change in
                guard let name = entityName[change.id.entityName], name != change.id.entityName,
                    let key = change.id.primaryKey
                else { return change }
                var change = change
                change.id = PersistentIdentifier(
                    storeIdentifier: change.id.storeIdentifier, entityName: name, key: .permanent(key))
                return change
            }
            return transaction
        }
        return result
    }

    /// How one entity's stored values change: renamed attributes (declared on it or inherited),
    /// and the defaults that attributes added or made required give objects holding nil.
    private struct RowRules {
        let renamed: [String: String]
        let fills: [(String, Value)]

        init(_ entity: ResolvedEntity, changes: [SchemaChanges.EntityChanges]) {
            renamed = Dictionary(
                changes.flatMap(\.renamedAttributes).map { ($0.old, $0.new) }, uniquingKeysWith: { a, _ in a })
            let filled = Set(changes.flatMap { $0.addedAttributes + $0.requiredAttributes })
            fills = entity.attributes.compactMap { attribute in
                guard filled.contains(attribute), let value = attribute.defaultValue else { return nil }
                return (attribute.name, value)
            }
        }
    }

    /// The changes of `entity` and of its ancestors (an attribute added to a superentity is
    /// added to its subentities' objects too).
    private func changes(for entity: ResolvedEntity, in byName: [String: SchemaChanges.EntityChanges]) -> [SchemaChanges
        .EntityChanges]
    {
        entity.ancestors.compactMap { byName[$0] }
    }
}
