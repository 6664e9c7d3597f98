import ModelCore
import Synchronization

/// One persisted property of a model class, classified.
// Immutable: its metadata holds key paths and metatypes, which are not Sendable.
final class PropertyInfo: @unchecked Sendable {
    let metadata: _PropertyMetadata
    let kind: PropertyKind

    init(_ metadata: _PropertyMetadata, kind: PropertyKind) {
        self.metadata = metadata
        self.kind = kind
    }

    var name: String { metadata.name }

    var isRelationship: Bool {
        if case .attribute = kind { return false }
        return true
    }

    var isToMany: Bool {
        if case .toMany = kind { return true }
        return false
    }

    var codec: AttributeCodec? {
        if case .attribute(let codec) = kind { return codec }
        return nil
    }

    var destination: (any PersistentModel.Type)? {
        switch kind {
        case .attribute: nil
        case .toOne(let type, _): type
        case .toMany(let type, _, _): type
        }
    }

    /// The property's value for these related objects (an array or set, an optional, or one object).
    func value(of objects: [AnyObject]) -> Any {
        switch kind {
        case .attribute:
            fatalError("\(name) is an attribute")
        case .toOne(let type, let isOptional):
            guard let first = objects.first else {
                guard isOptional else {
                    fatalError("the required relationship \(metadata.owner).\(name) holds no \(type)")
                }
                return nullValue(type)
            }
            return first
        case .toMany(_, let collection, _):
            return collection.make(objects)
        }
    }

    /// The related objects in a relationship value (an object, an optional, an array or set).
    func objects(in value: Any) -> [AnyObject] {
        guard let unwrapped = unwrap(value) else { return [] }
        if let collection = unwrapped as? any ToManyCollection { return collection.objects }
        return [unwrapped as AnyObject]
    }

    /// What a relationship reads as once its object has left its context: nothing.
    func emptyValue(detachedFrom record: ObjectRecord) -> Any {
        switch kind {
        case .toOne(let type, true): return nullValue(type)
        case .toMany(_, let collection, _): return collection.make([])
        default:
            fatalError(
                "\(record.info.entityName).\(name) of \(record.id) can't be read: the object was deleted")
        }
    }
}

/// Everything ModelClient needs to know about a model class, worked out once from what `@Model`
/// generated: its entity name, superclass, properties (inherited ones first) and the map from
/// key paths to property names.
final class ModelTypeInfo: @unchecked Sendable { // Immutable once made; holds metatypes and key paths.
    let type: any PersistentModel.Type
    let entityName: String
    let superInfo: ModelTypeInfo?
    let ownProperties: [PropertyInfo]
    let properties: [PropertyInfo]
    private let byName: [String: PropertyInfo]
    private let byKeyPath: [AnyKeyPath: PropertyInfo]
    /// The key paths of every property written against this class (an inherited property's
    /// among them), and the properties' names: `\Sub.name`, `\Sub?.?.name`.
    let selfKeyPaths: [(AnyKeyPath, String)]
    let entityMetadata: _EntityMetadata

    private init(_ type: any PersistentModel.Type, superInfo: ModelTypeInfo?) throws(ModelError) {
        self.type = type
        self.entityName = String(describing: type)
        self.superInfo = superInfo
        let metadata = type.schemaMetadata
        if let superInfo, metadata.contains(where: { ObjectIdentifier($0.owner) != ObjectIdentifier(type) }) {
            throw ModelError(
                .invalidSchema,
                "\(type) is a subclass of the model \(superInfo.type) but is not marked @Model itself: add @Model to \(type)"
            )
        }
        var own: [PropertyInfo] = []
        for property in metadata {
            own.append(
                PropertyInfo(
                    property, kind: try PropertyKind.of(property.valueType, property: "\(type).\(property.name)")))
        }
        ownProperties = own
        properties = (superInfo?.properties ?? []) + own
        byName = Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        var keyPaths: [AnyKeyPath: PropertyInfo] = [:]
        for property in properties { keyPaths[property.metadata.keyPath] = property }
        selfKeyPaths = type._$keyPathsForSelf
        for (keyPath, name) in selfKeyPaths { keyPaths[keyPath] = keyPaths[keyPath] ?? byName[name] }
        byKeyPath = keyPaths
        entityMetadata = type._$entityMetadata
    }

    /// The property named `name`, which `@Model` made (so it exists).
    func property(_ name: String) -> PropertyInfo {
        guard let property = byName[name] else {
            fatalError("\(entityName) has no persisted property '\(name)'")
        }
        return property
    }

    func propertyIfAny(_ name: String) -> PropertyInfo? { byName[name] }

    /// The property a key path names, for key paths of one property of this class (or a
    /// superclass); nil for anything else.
    func property(for keyPath: AnyKeyPath) -> PropertyInfo? {
        if let property = byKeyPath[keyPath] { return property }
        // A key path written against a subclass names the superclass's property just as well.
        return properties.first { $0.metadata.keyPath == keyPath }
    }

    /// The key path of `property` written against this class (an inherited property's too),
    /// as a `PartialKeyPath<Model>` for this class's `Model`.
    func keyPath<Model>(of property: PropertyInfo, as _: Model.Type) -> PartialKeyPath<Model>? {
        if let own = property.metadata.keyPath as? PartialKeyPath<Model> { return own }
        return selfKeyPaths.lazy.compactMap { $0.1 == property.name ? $0.0 as? PartialKeyPath<Model> : nil }.first
    }

    var attributes: [PropertyInfo] { properties.filter { !$0.isRelationship } }
    var relationships: [PropertyInfo] { properties.filter(\.isRelationship) }

    /// The names of the attributes a fetch of `fetched` (its `propertiesToFetch`) leaves out.
    func attributesLeftOut(fetching fetched: [String]) -> Set<String> {
        Set(attributes.map(\.name)).subtracting(fetched)
    }

    /// Whether `self` is `other` or a subclass of it.
    func isKind(of other: ModelTypeInfo) -> Bool {
        var current: ModelTypeInfo? = self
        while let info = current {
            if info === other { return true }
            current = info.superInfo
        }
        return false
    }

    // MARK: The cache

    private static let cache = Mutex<[ObjectIdentifier: ModelTypeInfo]>([:])

    /// The info of `type`, worked out on first use.
    static func of(_ type: any PersistentModel.Type) throws(ModelError) -> ModelTypeInfo {
        if let known = cache.withLock({ $0[ObjectIdentifier(type)] }) { return known }
        var superInfo: ModelTypeInfo?
        if let superclass = _getSuperclass(type) {
            if let superModel = superclass as? any PersistentModel.Type {
                superInfo = try of(superModel)
            }
        }
        let info = try ModelTypeInfo(type, superInfo: superInfo)
        return cache.withLock { cache in
            if let raced = cache[ObjectIdentifier(type)] { return raced }
            cache[ObjectIdentifier(type)] = info
            return info
        }
    }

    /// The info of a type already known to be a valid model (it is in a container's schema).
    static func known(_ type: any PersistentModel.Type) -> ModelTypeInfo {
        do {
            return try of(type)
        } catch {
            fatalError("\(error)")
        }
    }
}
