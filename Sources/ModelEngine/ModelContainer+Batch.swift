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
        let unit = makeContext(author: author, retainsSavedObjects: false)
        let ids = try await unit.fetch(
            FetchDescriptor(entityName: entity, predicate: predicate, resultType: .identifiers)
        ).identifiers
        let result = try await unit.save(applying: ids.map { .update($0, attributes: attributes, relationships: [:]) })
        return (ids.count, result)
    }
}
