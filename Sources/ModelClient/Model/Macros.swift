import ModelCore

/// Makes a class a persistent model, as SwiftData's `@Model` does: its stored properties are
/// persisted (attributes from value types, relationships from properties whose type is another
/// model or an array or set of them), it is `Observable`, and it tracks which properties changed.
/// Subclasses of a model, also marked `@Model`, are subentities. Mark properties that are not to
/// be stored `@Transient`.
@attached(
    member, names: named(_$modelState), named(init), named(schemaMetadata), named(_$entityMetadata),
    named(_$keyPathsForSelf), prefixed(_$keyPathsOf))
@attached(memberAttribute)
@attached(extension, conformances: PersistentModel, Observable, Hashable)
public macro Model() = #externalMacro(module: "ModelMacros", type: "ModelMacro")

/// Put on each persisted property by `@Model`; not for use directly.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _PersistedProperty() = #externalMacro(module: "ModelMacros", type: "PersistedPropertyMacro")

/// Options of an attribute: `.unique`, `.preserveValueOnDeletion` (kept in the deletion's
/// history tombstone), and `originalName:` (the name it had, for a rename).
@attached(peer)
public macro Attribute(_ options: AttributeOption..., originalName: String? = nil, hashModifier: String? = nil) =
    #externalMacro(module: "ModelMacros", type: "MarkerMacro")

/// Options of a relationship: the delete rule, the inverse (another model's key path back to
/// this one), the allowed number of objects (0 for no limit), and `originalName:`.
@attached(peer)
public macro Relationship(
    deleteRule: DeleteRule = .nullify, minimumModelCount: Int? = 0, maximumModelCount: Int? = 0,
    originalName: String? = nil, inverse: AnyKeyPath? = nil, hashModifier: String? = nil
) = #externalMacro(module: "ModelMacros", type: "MarkerMacro")

/// A property of a model that is not stored. It needs a default value.
@attached(peer)
public macro Transient() = #externalMacro(module: "ModelMacros", type: "MarkerMacro")

/// Unique constraints of a model: each argument is one constraint, over one or more properties.
/// Saving an inserted object that repeats a stored object's values updates the stored object
/// (SwiftData's upsert), or fails with `uniqueConstraint` when the context's
/// ``ModelContext/uniquenessPolicy`` is `.error`.
@freestanding(declaration)
public macro Unique<T>(_ constraints: [PartialKeyPath<T>]...) =
    #externalMacro(module: "ModelMacros", type: "ConstraintMacro")

/// Indexes of a model: each argument is one index, over one or more properties.
@freestanding(declaration)
public macro Index<T>(_ indices: [PartialKeyPath<T>]...) =
    #externalMacro(module: "ModelMacros", type: "ConstraintMacro")

/// An actor that owns a model context, as SwiftData's `@ModelActor`: it gets
/// `init(modelContainer:)`, `modelContainer` and `modelContext`. Its model objects stay inside
/// it; pass `PersistentIdentifier`s across.
@attached(member, names: named(modelContainer), named(modelContext), named(init))
@attached(extension, conformances: ModelActor)
public macro ModelActor() = #externalMacro(module: "ModelMacros", type: "ModelActorMacro")
