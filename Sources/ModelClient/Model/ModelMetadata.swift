import ModelCore

/// An option of `@Attribute`.
public struct AttributeOption: Hashable, Sendable {
    enum Kind: Hashable, Sendable {
        case unique, preserveValueOnDeletion, externalStorage
    }

    let kind: Kind

    /// No two objects of the entity may have the same value (a unique constraint of one attribute).
    public static let unique = AttributeOption(kind: .unique)
    /// The value stays in the history tombstone when the object is deleted.
    public static let preserveValueOnDeletion = AttributeOption(kind: .preserveValueOnDeletion)
    /// Accepted for SwiftData source compatibility; modeld keeps data values in the store itself.
    public static let externalStorage = AttributeOption(kind: .externalStorage)
}

/// `@Attribute`'s arguments, as `@Model` records them.
public struct _AttributeMetadata: Sendable {
    let options: [AttributeOption]
    let originalName: String?

    public init(_ options: AttributeOption..., originalName: String? = nil, hashModifier: String? = nil) {
        self.options = options
        self.originalName = originalName
    }
}

/// `@Relationship`'s arguments, as `@Model` records them.
// Immutable; AnyKeyPath is not marked Sendable but is never mutated.
public struct _RelationshipMetadata: @unchecked Sendable {
    let deleteRule: DeleteRule
    let minimumModelCount: Int?
    let maximumModelCount: Int?
    let originalName: String?
    /// The inverse's key path on the other model (immutable once made).
    let inverse: AnyKeyPath?

    public init(
        deleteRule: DeleteRule = .nullify, minimumModelCount: Int? = 0, maximumModelCount: Int? = 0,
        originalName: String? = nil, inverse: AnyKeyPath? = nil, hashModifier: String? = nil
    ) {
        self.deleteRule = deleteRule
        self.minimumModelCount = minimumModelCount == 0 ? nil : minimumModelCount
        self.maximumModelCount = maximumModelCount == 0 ? nil : maximumModelCount
        self.originalName = originalName
        self.inverse = inverse
    }
}

/// What a slot holds when read without going through the model's accessors.
enum SlotContent {
    case unloaded
    case value(Any)
}

/// One persisted property of a model class, as `@Model` describes it: its name, its key path
/// (which maps key paths in predicates and sort descriptors to names), its Swift type, and
/// type-erased access to its slot.
public struct _PropertyMetadata: @unchecked Sendable { // Immutable; holds key paths, metatypes and literal defaults.
    let name: String
    /// The class that declares the property.
    let owner: any PersistentModel.Type
    let keyPath: AnyKeyPath
    /// `\Root?.?.name`: the property reached through an optional, so that a key path through a
    /// to-one relationship (`\Item.trip?.name`) can be recognised as the relationship's key path
    /// with this one appended.
    let optionalChainKeyPath: AnyKeyPath?
    let valueType: Any.Type
    /// The declaration's default value, when it is a literal.
    let defaultValue: Any?
    let attribute: _AttributeMetadata?
    let relationship: _RelationshipMetadata?
    let readSlot: (AnyObject) -> SlotContent
    /// Sets the slot to a value (`Any` holding the property's type), or to unloaded (nil).
    let writeSlot: (AnyObject, Any?) -> Void
    /// Tells the object's observers that the property changed (a refresh, a rollback, an inverse).
    let notify: (AnyObject) -> Void

    public init<Root: PersistentModel, V>(
        _ owner: Root.Type, _ name: String, _ keyPath: KeyPath<Root, V>,
        _ slot: ReferenceWritableKeyPath<Root, _ModelSlot<V>>, _ optionalChainKeyPath: AnyKeyPath? = nil,
        default defaultValue: V? = nil, attribute: _AttributeMetadata? = nil, relationship: _RelationshipMetadata? = nil
    ) {
        self.name = name
        self.owner = owner
        self.keyPath = keyPath
        self.optionalChainKeyPath = optionalChainKeyPath
        self.valueType = V.self
        self.defaultValue = defaultValue.map { $0 as Any }
        self.attribute = attribute
        self.relationship = relationship
        readSlot = { object in
            guard case .value(let value) = (object as! Root)[keyPath: slot] else { return .unloaded }
            return .value(value)
        }
        writeSlot = { object, value in
            (object as! Root)[keyPath: slot] = value.map { .value($0 as! V) } ?? .unloaded
        }
        notify = { object in
            let model = object as! Root
            model._$modelState.registrar.withMutation(of: model, keyPath: keyPath) {}
        }
    }
}

/// A model's `#Unique` and `#Index` declarations, as `@Model` records them.
public struct _EntityMetadata: @unchecked Sendable { // Immutable lists of key paths.
    let unique: [[AnyKeyPath]]
    let indexes: [[AnyKeyPath]]
    /// `\Class.id` when `id` is the identity (PersistentModel's), nil when the class has an `id`
    /// of its own: how a predicate's `$0.id` is recognised.
    public let identity: AnyKeyPath?

    public init<T>(
        _ type: T.Type, unique: [[PartialKeyPath<T>]] = [], indexes: [[PartialKeyPath<T>]] = [],
        identity: PartialKeyPath<T>? = nil
    ) {
        self.unique = unique.map { $0.map { $0 as AnyKeyPath } }
        self.indexes = indexes.map { $0.map { $0 as AnyKeyPath } }
        self.identity = identity
    }
}
