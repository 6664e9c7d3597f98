import ModelCore

extension ModelContext {
    /// Saves `edits` through ``ModelContainer/saveInserts(_:author:uniquenessPolicy:)`` when
    /// this context was made for one save and has nothing pending; nil, having done nothing, for
    /// any other context or edits (the caller then records the edits and saves them).
    func saveInsertsDirectly(_ edits: [ObjectEdit]) async throws -> SaveResult? {
        guard !retainsSavedObjects, !pending.hasChanges else { return nil }
        guard let result = try await container.saveInserts(edits, author: author, uniquenessPolicy: uniquenessPolicy)
        else { return nil }
        pending = PendingChanges(schema: schema)
        return result
    }
}
