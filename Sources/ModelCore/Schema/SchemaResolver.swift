/// Turns a validated schema into resolved entities: inheritance flattened, inverses linked in
/// both directions, and each relationship's storage chosen.
struct SchemaResolver {
    private(set) var entities: [String: ResolvedEntity] = [:]
    private(set) var joinTables: [JoinTable] = []

    init(_ schema: Schema) {
        let byName = Dictionary(schema.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let children = Dictionary(grouping: schema.entities.filter { $0.superentity != nil }, by: { $0.superentity! })

        func ancestors(_ name: String) -> [String] {
            var chain = [name]
            while let parent = byName[chain.last!]?.superentity { chain.append(parent) }
            return chain
        }
        func descendants(_ name: String) -> [String] {
            [name] + (children[name] ?? []).flatMap { descendants($0.name) }
        }
        func root(_ name: String) -> String { ancestors(name).last! }

        // Link inverses both ways: a relationship's inverse is what it names, or the relationship
        // on the destination that names it.
        var inverses: [String: String] = [:] // "Entity.rel" -> inverse name
        for entity in schema.entities {
            for r in entity.relationships {
                if let inverse = r.inverse {
                    inverses["\(entity.name).\(r.name)"] = inverse
                    inverses["\(r.destination).\(inverse)"] = r.name
                }
            }
        }
        // Relationships are keyed by their declaring entity; inherited ones reuse the same key.
        var declaring: [String: (entity: String, description: RelationshipDescription)] = [:]
        for entity in schema.entities {
            for r in entity.relationships { declaring["\(entity.name).\(r.name)"] = (entity.name, r) }
        }
        func declaration(of name: String, visibleFrom entity: String) -> (
            entity: String, description: RelationshipDescription
        )? {
            for ancestor in ancestors(entity) {
                if let found = declaring["\(ancestor).\(name)"] { return found }
            }
            return nil
        }

        var joins: [String: JoinTable] = [:]
        func storage(of r: RelationshipDescription, declaredBy entity: String) -> RelationshipStorage {
            let key = "\(entity).\(r.name)"
            guard let inverseName = inverses[key],
                let inverse = declaration(of: inverseName, visibleFrom: r.destination)
            else {
                if !r.isToMany { return .foreignKey }
                let table = JoinTable(
                    name: "_join_\(entity)_\(r.name)", ownerEntity: entity, ownerRelationship: r.name,
                    sourceRoot: root(entity), targetRoot: root(r.destination))
                joins[table.name] = table
                return .joinTable(table, isOwner: true)
            }
            let otherKey = "\(inverse.entity).\(inverse.description.name)"
            switch (r.isToMany, inverse.description.isToMany) {
            case (false, true):
                return .foreignKey
            case (true, false):
                return .inverseForeignKey(entity: inverse.entity, relationship: inverse.description.name)
            case (false, false):
                return key < otherKey
                    ? .foreignKey
                    : .inverseForeignKey(entity: inverse.entity, relationship: inverse.description.name)
            case (true, true):
                let ownerIsThis = key < otherKey
                let owner = ownerIsThis ? (entity, r) : (inverse.entity, inverse.description)
                let name = "_join_\(owner.0)_\(owner.1.name)"
                let table = JoinTable(
                    name: name, ownerEntity: owner.0, ownerRelationship: owner.1.name,
                    sourceRoot: root(owner.0), targetRoot: root(owner.1.destination))
                joins[name] = table
                return .joinTable(table, isOwner: ownerIsThis)
            }
        }

        var resolvedRelationships: [String: ResolvedRelationship] = [:]
        for entity in schema.entities {
            for r in entity.relationships {
                let key = "\(entity.name).\(r.name)"
                resolvedRelationships[key] = ResolvedRelationship(
                    name: r.name, destination: r.destination, isToMany: r.isToMany, inverse: inverses[key],
                    deleteRule: r.deleteRule, isOptional: r.isOptional, minCount: r.minCount, maxCount: r.maxCount,
                    declaringEntity: entity.name, storage: storage(of: r, declaredBy: entity.name))
            }
        }

        for entity in schema.entities {
            let lineage = ancestors(entity.name).reversed().compactMap { byName[$0] }
            entities[entity.name] = ResolvedEntity(
                name: entity.name,
                superentity: entity.superentity,
                root: root(entity.name),
                isAbstract: entity.isAbstract,
                attributes: lineage.flatMap(\.attributes),
                relationships: lineage.flatMap { e in
                    e.relationships.compactMap { resolvedRelationships["\(e.name).\($0.name)"] }
                },
                uniqueConstraints: lineage.flatMap(\.uniqueConstraints),
                indexes: entity.indexes,
                descendants: descendants(entity.name),
                ancestors: ancestors(entity.name))
        }
        joinTables = joins.values.sorted { $0.name < $1.name }
    }
}
