import ModelCore

/// A class whose objects a ``ModelContext`` persists: what `@Model` makes of a class. Equal and
/// hashed by identity (one object per identifier in a context).
/// Identifiable, as SwiftData's: by ``persistentModelID`` unless the class declares an `id` of
/// its own.
public protocol PersistentModel: AnyObject, Observable, Hashable, Identifiable {
    /// Makes an object for a context to fill from the store (without your initializer).
    init(backingData: _ModelBackingData)
    /// The class's own persisted properties (a subclass lists only those it adds).
    static var schemaMetadata: [_PropertyMetadata] { get }
    /// The class's `#Unique` and `#Index` declarations.
    static var _$entityMetadata: _EntityMetadata { get }
    /// The key paths of every persisted property, its superclasses' included, written against
    /// the class itself (`\Sub.name`, `\Sub?.?.name`), with the properties' names.
    static var _$keyPathsForSelf: [(AnyKeyPath, String)] { get }
    /// The object's identity, context and changes.
    var _$modelState: _ModelState { get }
}

/// What a context hands ``PersistentModel/init(backingData:)``; it carries nothing today, and
/// is there so that generated initializers never clash with yours.
public struct _ModelBackingData: Sendable {
    init() {}
}

/// The storage of one persisted property: its value, or nothing yet (an object fetched from a
/// store reads its values from its context when first asked).
public enum _ModelSlot<Value> {
    case unloaded
    case value(Value)

    public init(_ value: Value) { self = .value(value) }
}

extension PersistentModel {
    /// None, for a class `@Model` did not make.
    public static var _$keyPathsForSelf: [(AnyKeyPath, String)] { [] }

    /// The object's identity: temporary until the context that inserted it saves, permanent after.
    public var persistentModelID: PersistentIdentifier { _$modelState.identifier(of: Self.self) }

    /// SwiftData's `Identifiable` identity: ``persistentModelID`` (a class may declare its own `id`).
    public var id: PersistentIdentifier { persistentModelID }

    /// The context the object belongs to, if any (nil before insertion and after deletion).
    public var modelContext: ModelContext? { _$modelState.core?.owner }

    /// Whether the object has changes its context has not saved.
    public var hasChanges: Bool { _$modelState.record.map { $0.hasChanges } ?? false }

    /// Whether the object was deleted: marked by its context, or deleted by a save.
    public var isDeleted: Bool { _$modelState.isDeleted || (_$modelState.attachedRecord?.isMarkedDeleted ?? false) }

    /// The names of the properties changed since the object was last saved or fetched.
    public var changedPropertyNames: Set<String> { _$modelState.record?.changed ?? [] }

    /// The name of the model's entity: the class's name.
    public static var entityName: String { String(describing: self) }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// Reads a persisted property (what `@Model`'s accessors call).
    public func _$read<V>(
        _ property: KeyPath<Self, V>, _ slot: ReferenceWritableKeyPath<Self, _ModelSlot<V>>, _ name: String
    ) -> V {
        let state = _$modelState
        state.registrar.access(self, keyPath: property)
        if case .value(let value) = self[keyPath: slot] { return value }
        return state.load(self, property: name) as! V
    }

    /// Writes a persisted property (what `@Model`'s accessors call).
    public func _$write<V>(
        _ property: KeyPath<Self, V>, _ slot: ReferenceWritableKeyPath<Self, _ModelSlot<V>>, _ name: String,
        _ newValue: V
    ) {
        let state = _$modelState
        state.registrar.withMutation(of: self, keyPath: property) {
            if state.store(self, property: name, value: newValue) {
                self[keyPath: slot] = .value(newValue)
            }
        }
    }
}
