import ModelCore

/// One edit of a context, for ``ModelContext/apply(_:)``, which makes several as one operation.
public enum ContextEdit: Hashable, Sendable {
    /// Inserts an object of an entity; with an identifier, the new object's temporary identifier
    /// (so that later edits of the same batch can refer to it), otherwise a new one.
    case insert(entity: String, attributes: [String: Value], relationships: [String: RelationshipValue], id: PersistentIdentifier?)
    /// Sets attributes and relationships (a to-many value replaces the set).
    case update(PersistentIdentifier, attributes: [String: Value], relationships: [String: RelationshipValue])
    case delete(PersistentIdentifier)
    /// Adds targets to a to-many relationship of an object.
    case add([PersistentIdentifier], relationship: String, of: PersistentIdentifier)
    /// Removes targets from a to-many relationship of an object.
    case remove([PersistentIdentifier], relationship: String, of: PersistentIdentifier)
}
