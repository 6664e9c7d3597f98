import ModelCore

extension Schema {
    /// Reads a schema from the wire. Types and rules must be set and known; whether the schema
    /// makes sense (names, inverses, cycles) is `Schema.validate()`'s business.
    public init(wire: Modeld_V1_Schema) throws(ModelError) {
        var entities: [EntityDescription] = []
        for entity in wire.entities { entities.append(try EntityDescription(wire: entity)) }
        self.init(entities: entities)
    }

    /// The wire form of this schema.
    public var wire: Modeld_V1_Schema {
        Modeld_V1_Schema.with { $0.entities = entities.map(\.wire) }
    }
}

extension EntityDescription {
    init(wire: Modeld_V1_Entity) throws(ModelError) {
        var attributes: [AttributeDescription] = []
        for attribute in wire.attributes {
            attributes.append(try AttributeDescription(wire: attribute, entity: wire.name))
        }
        var relationships: [RelationshipDescription] = []
        for relationship in wire.relationships {
            relationships.append(try RelationshipDescription(wire: relationship, entity: wire.name))
        }
        self.init(
            name: wire.name, superentity: wire.hasSuperentity ? wire.superentity : nil, isAbstract: wire.isAbstract,
            attributes: attributes, relationships: relationships,
            uniqueConstraints: wire.uniqueConstraints.map(\.names), indexes: wire.indexes.map(\.names),
            originalName: wire.hasOriginalName ? wire.originalName : nil)
    }

    var wire: Modeld_V1_Entity {
        var wire = Modeld_V1_Entity()
        wire.name = name
        if let superentity { wire.superentity = superentity }
        wire.isAbstract = isAbstract
        wire.attributes = attributes.map(\.wire)
        wire.relationships = relationships.map(\.wire)
        wire.uniqueConstraints = uniqueConstraints.map { names in Modeld_V1_NameList.with { $0.names = names } }
        wire.indexes = indexes.map { names in Modeld_V1_NameList.with { $0.names = names } }
        if let originalName { wire.originalName = originalName }
        return wire
    }
}

extension AttributeDescription {
    init(wire: Modeld_V1_Attribute, entity: String) throws(ModelError) {
        let type = try AttributeType(wire: wire.type, attribute: "\(entity).\(wire.name)")
        var defaultValue: Value?
        if wire.hasDefaultValue {
            let value: Value
            do {
                value = try Value(wire: wire.defaultValue)
            } catch {
                // Named as the schema's other errors name what they are about.
                throw ModelError(
                    .invalidSchema, "the default of '\(entity).\(wire.name)': \(error.message)",
                    context: ["entity": entity, "attribute": wire.name])
            }
            defaultValue = value.isNull ? nil : value
        }
        self.init(
            name: wire.name, type: type, isOptional: wire.isOptional, defaultValue: defaultValue,
            preserveValueOnDeletion: wire.preserveValueOnDeletion,
            originalName: wire.hasOriginalName ? wire.originalName : nil)
    }

    var wire: Modeld_V1_Attribute {
        var wire = Modeld_V1_Attribute()
        wire.name = name
        wire.type = type.wire
        wire.isOptional = isOptional
        if let defaultValue { wire.defaultValue = defaultValue.wire }
        wire.preserveValueOnDeletion = preserveValueOnDeletion
        if let originalName { wire.originalName = originalName }
        return wire
    }
}

extension AttributeType {
    static let wireTypes: [(AttributeType, Modeld_V1_AttributeType)] = [
        (.string, .string), (.int, .int), (.double, .double), (.bool, .bool), (.date, .date), (.data, .data),
        (.uuid, .uuid), (.url, .url), (.decimal, .decimal), (.json, .json),
    ]

    init(wire: Modeld_V1_AttributeType, attribute: String) throws(ModelError) {
        guard let type = Self.wireTypes.first(where: { $0.1 == wire })?.0 else {
            throw ModelError(
                .invalidSchema,
                "attribute '\(attribute)' has no type (or an unknown one); set one of string, int, double, bool, date, data, uuid, url, decimal, json",
                context: ["attribute": attribute])
        }
        self = type
    }

    /// The wire form of this type.
    public var wire: Modeld_V1_AttributeType {
        Self.wireTypes.first { $0.0 == self }?.1 ?? .unspecified
    }
}

extension RelationshipDescription {
    init(wire: Modeld_V1_Relationship, entity: String) throws(ModelError) {
        let rule: DeleteRule
        switch wire.deleteRule {
        case .nullify: rule = .nullify
        case .cascade: rule = .cascade
        case .deny: rule = .deny
        case .noAction: rule = .noAction
        case .UNRECOGNIZED(let number):
            throw ModelError(
                .invalidSchema, "relationship '\(entity).\(wire.name)' has an unknown delete rule \(number)",
                context: ["relationship": "\(entity).\(wire.name)"])
        }
        func count(_ value: Int64, _ label: String) throws(ModelError) -> Int {
            guard let count = Int(exactly: value), count >= 0 else {
                throw ModelError(
                    .invalidSchema, "relationship '\(entity).\(wire.name)' has \(label) \(value); it must be 0 or more",
                    context: ["relationship": "\(entity).\(wire.name)"])
            }
            return count
        }
        self.init(
            name: wire.name, destination: wire.destination, isToMany: wire.toMany,
            inverse: wire.hasInverse ? wire.inverse : nil, deleteRule: rule, isOptional: !wire.isRequired,
            minCount: wire.hasMinCount ? try count(wire.minCount, "min_count") : nil,
            maxCount: wire.hasMaxCount ? try count(wire.maxCount, "max_count") : nil)
    }

    var wire: Modeld_V1_Relationship {
        var wire = Modeld_V1_Relationship()
        wire.name = name
        wire.destination = destination
        wire.toMany = isToMany
        if let inverse { wire.inverse = inverse }
        wire.deleteRule =
            switch deleteRule {
            case .nullify: .nullify
            case .cascade: .cascade
            case .deny: .deny
            case .noAction: .noAction
            }
        wire.isRequired = !isOptional
        if let minCount { wire.minCount = Int64(minCount) }
        if let maxCount { wire.maxCount = Int64(maxCount) }
        return wire
    }
}
