/// One edit of objects, as a context (``ModelEngine``'s `ModelContext.apply(_:)`) or a daemon
/// session makes it: several are made as one operation, all or none.
public enum ObjectEdit: Hashable, Sendable {
    /// Inserts an object of an entity; with an identifier, the new object's temporary identifier
    /// (so that later edits of the same batch can refer to it), otherwise a new one.
    case insert(
        entity: String, attributes: [String: Value], relationships: [String: RelationshipValue],
        id: PersistentIdentifier?)
    /// Sets attributes and relationships (a to-many value replaces the set).
    case update(PersistentIdentifier, attributes: [String: Value], relationships: [String: RelationshipValue])
    case delete(PersistentIdentifier)
    /// Adds targets to a to-many relationship of an object.
    case add([PersistentIdentifier], relationship: String, of: PersistentIdentifier)
    /// Removes targets from a to-many relationship of an object.
    case remove([PersistentIdentifier], relationship: String, of: PersistentIdentifier)
    /// The object was read at this version (``ObjectSnapshot/version``): its update or delete in
    /// the same save conflicts if it has changed since, as a context's own reads make it.
    case expectVersion(Int64, of: PersistentIdentifier)
}
