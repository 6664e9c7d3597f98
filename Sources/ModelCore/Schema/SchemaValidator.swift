/// Checks a schema before it is used: every rejection names the culprit.
struct SchemaValidator {
    let schema: Schema
    private let byName: [String: EntityDescription]

    init(_ schema: Schema) {
        self.schema = schema
        var byName: [String: EntityDescription] = [:]
        for entity in schema.entities where byName[entity.name] == nil { byName[entity.name] = entity }
        self.byName = byName
    }

    func validate() throws(ModelError) {
        var seen: [String: String] = [:]
        for entity in schema.entities {
            try SchemaNames.check(entity.name, kind: "entity")
            if let other = seen[entity.name.lowercased()] {
                throw invalid(
                    "entity '\(entity.name)' is declared twice (names ignore case: '\(other)')", entity: entity.name)
            }
            seen[entity.name.lowercased()] = entity.name
        }
        for entity in schema.entities { try checkInheritance(entity) }
        for entity in schema.entities { try checkProperties(entity) }
        try checkHierarchyColumns()
        for entity in schema.entities { try checkRelationships(entity) }
        for entity in schema.entities { try checkConstraints(entity) }
    }

    private func invalid(_ message: String, entity: String, _ more: [String: String] = [:]) -> ModelError {
        ModelError(.invalidSchema, message, context: more.merging(["entity": entity]) { a, _ in a })
    }

    private func checkInheritance(_ entity: EntityDescription) throws(ModelError) {
        var chain = [entity.name]
        var current = entity
        while let parentName = current.superentity {
            guard let parent = byName[parentName] else {
                throw invalid(
                    "entity '\(current.name)' inherits from '\(parentName)', which the schema does not define",
                    entity: current.name)
            }
            if chain.contains(parentName) {
                throw invalid(
                    "inheritance cycle: \((chain + [parentName]).joined(separator: " -> "))", entity: entity.name)
            }
            chain.append(parentName)
            current = parent
        }
    }

    /// All attributes and relationships visible on `entity`, the superentity's first.
    func properties(of entity: EntityDescription) -> (
        attributes: [AttributeDescription], relationships: [RelationshipDescription]
    ) {
        var lineage: [EntityDescription] = [entity]
        while let parent = lineage.last?.superentity.flatMap({ byName[$0] }),
            !lineage.contains(where: { $0.name == parent.name })
        {
            lineage.append(parent)
        }
        let ordered = lineage.reversed()
        return (ordered.flatMap(\.attributes), ordered.flatMap(\.relationships))
    }

    private func checkProperties(_ entity: EntityDescription) throws(ModelError) {
        for attribute in entity.attributes {
            try SchemaNames.check(attribute.name, kind: "attribute", in: entity.name)
            if let original = attribute.originalName {
                try SchemaNames.check(original, kind: "originalName", in: entity.name)
            }
            if let value = attribute.defaultValue {
                guard value.type == attribute.type else {
                    throw invalid(
                        "the default of '\(entity.name).\(attribute.name)' is \(value.debugText), not a \(attribute.type.rawValue)",
                        entity: entity.name, ["attribute": attribute.name])
                }
                // The schema travels as JSON, which has no infinities or NaN.
                if case .double(let d) = value, !d.isFinite {
                    throw invalid(
                        "the default of '\(entity.name).\(attribute.name)' is \(d), which JSON cannot carry; use a finite number",
                        entity: entity.name, ["attribute": attribute.name])
                }
            }
        }
        for relationship in entity.relationships {
            try SchemaNames.check(relationship.name, kind: "relationship", in: entity.name)
        }
    }

    /// Entities of one hierarchy share a table, so a property name may appear once per hierarchy.
    private func checkHierarchyColumns() throws(ModelError) {
        var owners: [String: [String: (entity: String, name: String)]] = [:]
        for entity in schema.entities {
            let root = rootName(of: entity)
            let names = entity.attributes.map(\.name) + entity.relationships.map(\.name)
            for name in names {
                let key = name.lowercased()
                if let previous = owners[root]?[key] {
                    let detail =
                        previous.entity == entity.name
                        ? "entity '\(entity.name)' declares '\(name)' twice (property names ignore case)"
                        : "'\(name)' is declared by both '\(previous.entity)' and '\(entity.name)', which share a table in the '\(root)' hierarchy; declare it once on a common superentity or rename one"
                    throw invalid(detail, entity: entity.name, ["property": name])
                }
                owners[root, default: [:]][key] = (entity.name, name)
            }
        }
    }

    private func rootName(of entity: EntityDescription) -> String {
        var current = entity
        var steps = 0
        while let parent = current.superentity.flatMap({ byName[$0] }), steps < schema.entities.count {
            current = parent
            steps += 1
        }
        return current.name
    }

    private func checkRelationships(_ entity: EntityDescription) throws(ModelError) {
        for r in entity.relationships {
            let label = "'\(entity.name).\(r.name)'"
            guard let destination = byName[r.destination] else {
                throw invalid(
                    "relationship \(label) points to entity '\(r.destination)', which the schema does not define",
                    entity: entity.name, ["relationship": r.name])
            }
            if r.isToMany {
                if let min = r.minCount, min < 0 {
                    throw invalid("relationship \(label) has a negative minCount", entity: entity.name)
                }
                if let max = r.maxCount, max < 0 {
                    throw invalid("relationship \(label) has a negative maxCount", entity: entity.name)
                }
                if let min = r.minCount, let max = r.maxCount, min > max {
                    throw invalid(
                        "relationship \(label) has minCount \(min) above maxCount \(max)", entity: entity.name)
                }
            } else if r.minCount != nil || r.maxCount != nil {
                throw invalid(
                    "relationship \(label) is to-one: use 'optional' instead of minCount/maxCount", entity: entity.name)
            }
            if let inverseName = r.inverse {
                guard let inverse = properties(of: destination).relationships.first(where: { $0.name == inverseName })
                else {
                    throw invalid(
                        "relationship \(label) names inverse '\(inverseName)', but '\(destination.name)' has no relationship '\(inverseName)'",
                        entity: entity.name, ["relationship": r.name])
                }
                if inverse.destination == entity.name, inverse.name == r.name, destination.name == entity.name {
                    throw invalid("relationship \(label) cannot be its own inverse", entity: entity.name)
                }
                guard inverse.destination == entity.name, inverse.inverse == nil || inverse.inverse == r.name else {
                    throw invalid(
                        "relationship \(label) names inverse '\(destination.name).\(inverseName)', which does not point back (it points to '\(inverse.destination)\(inverse.inverse.map { ".\($0)" } ?? "")')",
                        entity: entity.name, ["relationship": r.name])
                }
            }
            // Two relationships may not both claim the same inverse.
            let claimants = properties(of: destination).relationships.filter {
                $0.inverse == r.name && $0.destination == entity.name
            }
            if claimants.count > 1 {
                throw invalid(
                    "relationship \(label) is named as inverse by more than one relationship of '\(destination.name)'",
                    entity: entity.name)
            }
            if let claimant = claimants.first, let own = r.inverse, own != claimant.name {
                throw invalid(
                    "relationship \(label) names inverse '\(own)', but '\(destination.name).\(claimant.name)' names \(label) as its inverse",
                    entity: entity.name)
            }
        }
    }

    private func checkConstraints(_ entity: EntityDescription) throws(ModelError) {
        let visible = properties(of: entity)
        let attributes = Set(visible.attributes.map(\.name))
        let toOne = Set(visible.relationships.filter { !$0.isToMany }.map(\.name))
        for constraint in entity.uniqueConstraints {
            guard !constraint.isEmpty else {
                throw invalid("entity '\(entity.name)' has an empty unique constraint", entity: entity.name)
            }
            for name in constraint where !attributes.contains(name) {
                throw invalid(
                    "unique constraint [\(constraint.joined(separator: ", "))] on '\(entity.name)' names '\(name)', which is not an attribute of '\(entity.name)'",
                    entity: entity.name, ["attribute": name])
            }
        }
        for index in entity.indexes {
            guard !index.isEmpty else {
                throw invalid("entity '\(entity.name)' has an empty index", entity: entity.name)
            }
            for name in index where !attributes.contains(name) && !toOne.contains(name) {
                throw invalid(
                    "index [\(index.joined(separator: ", "))] on '\(entity.name)' names '\(name)', which is not an attribute or to-one relationship of '\(entity.name)'",
                    entity: entity.name, ["attribute": name])
            }
        }
    }
}
