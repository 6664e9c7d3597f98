/// A key path resolved against a schema: the relationships it walks and the attribute it ends at.
public struct ResolvedPath: Sendable {
    /// The entity the path starts at (the fetched entity, or a SUBQUERY variable's entity).
    public let start: ResolvedEntity
    /// The relationships walked, in order. The last one is the end of the path when
    /// ``attribute`` is nil.
    public let relationships: [ResolvedRelationship]
    /// The attribute the path ends at, or nil when it ends at an object (a relationship or self).
    public let attribute: AttributeDescription?
    /// The entity reached after walking ``relationships`` (``start`` for an empty walk).
    public let end: ResolvedEntity

    /// Where in ``relationships`` the one to-many relationship is, if the path has one.
    public var toManyIndex: Int? { relationships.firstIndex(where: \.isToMany) }

    /// Whether the path ends at an object reference rather than an attribute.
    public var endsAtObject: Bool { attribute == nil }

    /// Whether the path ends at a to-many relationship (`items`).
    public var endsAtToMany: Bool { attribute == nil && (relationships.last?.isToMany ?? false) }
}

extension ResolvedSchema {
    /// Resolves `path` starting at `entity` (or at the entity bound to the path's variable).
    /// A path may cross at most one to-many relationship; an attribute ends it.
    public func resolve(
        _ path: PropertyPath, from entity: ResolvedEntity,
        variables: [String: ResolvedEntity] = [:]
    ) throws(ModelError) -> ResolvedPath {
        var current = entity
        if let variable = path.variable {
            guard let bound = variables[variable] else {
                throw ModelError(
                    .invalidPredicate,
                    "variable $\(variable) is not defined here; variables are introduced by SUBQUERY(collection, $\(variable), …)",
                    context: ["keyPath": path.description])
            }
            current = bound
        }
        let start = current
        var relationships: [ResolvedRelationship] = []
        var attribute: AttributeDescription?
        for (offset, name) in path.components.enumerated() {
            if let found = current.attribute(name) {
                guard offset == path.components.count - 1 else {
                    throw ModelError(
                        .invalidPredicate,
                        "'\(path)' continues after attribute '\(name)' of '\(current.name)'; only relationships can be followed with a dot",
                        context: ["keyPath": path.description, "entity": current.name])
                }
                attribute = found
            } else if let relationship = current.relationship(name) {
                if relationship.isToMany, relationships.contains(where: \.isToMany) {
                    throw ModelError(
                        .invalidPredicate,
                        "'\(path)' crosses more than one to-many relationship; use SUBQUERY for nested collections",
                        context: ["keyPath": path.description])
                }
                relationships.append(relationship)
                current = try self.entity(relationship.destination)
            } else {
                throw ModelError(
                    .unknownProperty,
                    "'\(path)': entity '\(current.name)' has no attribute or relationship named '\(name)'",
                    context: ["keyPath": path.description, "entity": current.name, "property": name])
            }
        }
        return ResolvedPath(start: start, relationships: relationships, attribute: attribute, end: current)
    }
}
