import ModelCore

extension ModelContainer {
    /// Sets `attributes` on every object of `entity` (and its subentities) that matches
    /// `predicate`, in a save of its own (Core Data's batch update): the objects are not loaded,
    /// and validation, uniqueness and history are those of any save. Returns how many objects
    /// matched and what the save did (no token when none matched).
    public func batchUpdate(
        _ entity: String, where predicate: Predicate?, set attributes: [String: Value], author: String?
    ) async throws -> (matched: Int, result: SaveResult) {
        guard !attributes.isEmpty else {
            throw ModelError(.invalidArgument, "a batch update needs at least one attribute to set")
        }
        // Checked before any object is looked for, so that a value no object could take (NaN, an
        // unknown attribute) is refused whether or not objects match.
        _ = try convert(attributes, for: try schema.entity(entity))
        return try await batch(entity, where: predicate, author: author) {
            .update($0, attributes: attributes, relationships: [:])
        }
    }

    /// Deletes every object of `entity` (and its subentities) that matches `predicate`, delete
    /// rules included, in a save of its own. Returns how many objects matched and what the save did.
    public func batchDelete(_ entity: String, where predicate: Predicate?, author: String?) async throws
        -> (matched: Int, result: SaveResult)
    {
        try await batch(entity, where: predicate, author: author) { .delete($0) }
    }

    /// Applies `edit` to every object `predicate` selects, in a context made for that one save.
    private func batch(
        _ entity: String, where predicate: Predicate?, author: String?,
        _ edit: (PersistentIdentifier) -> ObjectEdit
    ) async throws -> (matched: Int, result: SaveResult) {
        let unit = makeContext(author: author, retainsSavedObjects: false)
        let ids = try await unit.fetch(
            FetchDescriptor(entityName: entity, predicate: predicate, resultType: .identifiers)
        ).identifiers
        return (ids.count, try await unit.save(applying: ids.map(edit)))
    }
}
