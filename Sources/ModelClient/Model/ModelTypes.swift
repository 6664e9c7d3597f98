import ModelCore

/// The model classes of a container and the schema derived from them. Related models and
/// superclasses are found from the classes given, as SwiftData does; subclasses must be listed.
struct ModelTypes: @unchecked Sendable { // Immutable: only `let`s of immutable ModelTypeInfo classes.
    let infos: [ModelTypeInfo]
    private let byEntity: [String: ModelTypeInfo]
    let schema: ModelCore.Schema
    /// The schema, validated.
    let resolved: ResolvedSchema
    /// The inverse of each relationship that has one, by declaring entity and name.
    private let inverseNames: [PairKey: String]

    init(_ types: [any PersistentModel.Type]) throws(ModelError) {
        var infos: [ModelTypeInfo] = []
        var seen = Set<ObjectIdentifier>()
        var queue = types
        while !queue.isEmpty {
            let type = queue.removeFirst()
            guard seen.insert(ObjectIdentifier(type)).inserted else { continue }
            let info = try ModelTypeInfo.of(type)
            infos.append(info)
            if let superInfo = info.superInfo { queue.append(superInfo.type) }
            queue.append(contentsOf: info.ownProperties.compactMap(\.destination))
        }
        var byEntity: [String: ModelTypeInfo] = [:]
        for info in infos {
            if let other = byEntity[info.entityName] {
                throw ModelError(
                    .invalidSchema,
                    "two model classes are named \(info.entityName) (\(String(reflecting: other.type)) and \(String(reflecting: info.type))): an entity's name is its class's name, so rename one"
                )
            }
            byEntity[info.entityName] = info
        }
        self.infos = infos
        self.byEntity = byEntity
        let inverses = try Self.inverses(infos)
        inverseNames = inverses
        schema = ModelCore.Schema(
            entities: try infos.map { info throws(ModelError) in try Self.entity(info, inverses: inverses) })
        resolved = try ResolvedSchema(schema)
    }

    func info(forEntity name: String) -> ModelTypeInfo? { byEntity[name] }

    /// The inverse of the relationship `name` of `info` (declared there or in a superclass).
    func inverse(of info: ModelTypeInfo, _ name: String) -> String? {
        var current: ModelTypeInfo? = info
        while let candidate = current {
            if let inverse = inverseNames[PairKey(candidate.entityName, name)] { return inverse }
            current = candidate.superInfo
        }
        return nil
    }

    func info(for type: any PersistentModel.Type) throws(ModelError) -> ModelTypeInfo {
        guard let info = byEntity[String(describing: type)], info.type == type else {
            throw ModelError(
                .unknownEntity, "\(type) is not a model of this container: list it in ModelContainer(for: …)",
                context: ["entity": String(describing: type)])
        }
        return info
    }

    /// The entity names of `info` and its subclasses.
    func entityNames(kindOf info: ModelTypeInfo) -> [String] {
        infos.filter { $0.isKind(of: info) }.map(\.entityName)
    }

    private static func entity(_ info: ModelTypeInfo, inverses: [PairKey: String]) throws(ModelError)
        -> EntityDescription
    {
        var attributes: [AttributeDescription] = []
        var relationships: [RelationshipDescription] = []
        var unique: [[String]] = []
        for property in info.ownProperties {
            let name = property.name
            switch property.kind {
            case .attribute(let codec):
                let options = property.metadata.attribute?.options ?? []
                if options.contains(.unique) { unique.append([name]) }
                var defaultValue: Value?
                if let literal = property.metadata.defaultValue { defaultValue = try? codec.encode(literal) }
                if defaultValue == .null { defaultValue = nil }
                if property.metadata.relationship != nil {
                    throw ModelError(
                        .invalidSchema,
                        "\(info.entityName).\(name) has @Relationship, but its type \(property.metadata.valueType) is not a model: use @Attribute"
                    )
                }
                attributes.append(
                    AttributeDescription(
                        name: name, type: codec.type, isOptional: codec.isOptional, defaultValue: defaultValue,
                        preserveValueOnDeletion: options.contains(.preserveValueOnDeletion),
                        originalName: property.metadata.attribute?.originalName
                    ))
            case .toOne(let destination, let isOptional):
                try checkNoAttributeOptions(property, info)
                let options = property.metadata.relationship
                relationships.append(
                    RelationshipDescription(
                        name: name, destination: String(describing: destination), isToMany: false,
                        inverse: inverses[PairKey(info.entityName, name)], deleteRule: options?.deleteRule ?? .nullify,
                        isOptional: isOptional
                    ))
            case .toMany(let destination, _, _):
                try checkNoAttributeOptions(property, info)
                let options = property.metadata.relationship
                relationships.append(
                    RelationshipDescription(
                        name: name, destination: String(describing: destination), isToMany: true,
                        inverse: inverses[PairKey(info.entityName, name)], deleteRule: options?.deleteRule ?? .nullify,
                        isOptional: true, minCount: options?.minimumModelCount, maxCount: options?.maximumModelCount
                    ))
            }
        }
        func names(_ keyPaths: [AnyKeyPath], _ macro: String) throws(ModelError) -> [String] {
            try keyPaths.map { keyPath throws(ModelError) in
                guard let property = info.property(for: keyPath) else {
                    throw ModelError(
                        .invalidSchema,
                        "#\(macro)<\(info.entityName)> names \(keyPath.readableName), which is not a persisted property of \(info.entityName)"
                    )
                }
                return property.name
            }
        }
        for constraint in info.entityMetadata.unique { unique.append(try names(constraint, "Unique")) }
        var indexes: [[String]] = []
        for index in info.entityMetadata.indexes { indexes.append(try names(index, "Index")) }
        return EntityDescription(
            name: info.entityName, superentity: info.superInfo?.entityName, attributes: attributes,
            relationships: relationships, uniqueConstraints: unique, indexes: indexes)
    }

    private static func checkNoAttributeOptions(_ property: PropertyInfo, _ info: ModelTypeInfo) throws(ModelError) {
        if property.metadata.attribute != nil {
            throw ModelError(
                .invalidSchema,
                "\(info.entityName).\(property.name) is a relationship (its type is a model), so it takes @Relationship, not @Attribute"
            )
        }
    }

    struct PairKey: Hashable {
        let entity: String
        let property: String
        init(_ entity: String, _ property: String) { self.entity = entity; self.property = property }
    }

    /// The inverse of every relationship that has one: declared with `inverse:` on either side,
    /// or inferred when two models each have exactly one relationship to the other.
    private static func inverses(_ infos: [ModelTypeInfo]) throws(ModelError) -> [PairKey: String] {
        var result: [PairKey: String] = [:]
        func pair(_ a: ModelTypeInfo, _ r: PropertyInfo, _ b: ModelTypeInfo, _ s: PropertyInfo) throws(ModelError) {
            for (entity, property, other) in [(a, r, s), (b, s, r)] {
                let key = PairKey(entity.entityName, property.name)
                if let existing = result[key], existing != other.name {
                    throw ModelError(
                        .invalidSchema,
                        "\(entity.entityName).\(property.name) is declared the inverse of both \(existing) and \(other.name)"
                    )
                }
                result[key] = other.name
            }
        }
        for info in infos {
            for relationship in info.ownProperties where relationship.isRelationship {
                guard let inverse = relationship.metadata.relationship?.inverse else { continue }
                guard let destination = relationship.destination,
                    let target = infos.first(where: { $0.type == destination }),
                    let other = target.property(for: inverse), other.isRelationship
                else {
                    throw ModelError(
                        .invalidSchema,
                        "the inverse of \(info.entityName).\(relationship.name), \(inverse), is not a relationship of \(relationship.destination.map { String(describing: $0) } ?? "its destination")"
                    )
                }
                guard let back = other.destination,
                    info.type == back || infoOf(back, infos).map({ info.isKind(of: $0) }) == true
                else {
                    throw ModelError(
                        .invalidSchema,
                        "the inverse of \(info.entityName).\(relationship.name) is \(target.entityName).\(other.name), which holds \(other.destination.map { String(describing: $0) } ?? "values"), not \(info.entityName)"
                    )
                }
                try pair(info, relationship, owner(of: other, from: target), other)
            }
        }
        // Infer the rest where it is unambiguous.
        for info in infos {
            for relationship in info.ownProperties
            where relationship.isRelationship && result[PairKey(info.entityName, relationship.name)] == nil {
                guard let destination = relationship.destination,
                    let target = infos.first(where: { $0.type == destination })
                else { continue }
                let back = target.relationships.filter {
                    $0.destination == info.type
                        && result[PairKey(owner(of: $0, from: target).entityName, $0.name)] == nil
                }
                let forth = info.relationships.filter {
                    $0.destination == target.type
                        && result[PairKey(owner(of: $0, from: info).entityName, $0.name)] == nil
                }
                guard back.count == 1, forth.count == 1, let other = back.first, other !== relationship else {
                    continue
                }
                try pair(info, relationship, owner(of: other, from: target), other)
            }
        }
        return result
    }

    private static func infoOf(_ type: any PersistentModel.Type, _ infos: [ModelTypeInfo]) -> ModelTypeInfo? {
        infos.first { $0.type == type }
    }

    /// The class among `info` and its superclasses that declares `property`.
    private static func owner(of property: PropertyInfo, from info: ModelTypeInfo) -> ModelTypeInfo {
        var current: ModelTypeInfo? = info
        while let candidate = current {
            if candidate.ownProperties.contains(where: { $0 === property }) { return candidate }
            current = candidate.superInfo
        }
        return info
    }
}
