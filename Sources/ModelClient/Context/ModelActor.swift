/// An actor that owns a model context (what `@ModelActor` makes). Its objects stay inside it;
/// its methods take and return `PersistentIdentifier`s, which are Sendable.
public protocol ModelActor: Actor {
    nonisolated var modelContainer: ModelContainer { get }
    var modelContext: ModelContext { get }
}

extension ModelActor {
    /// The object with `id` in this actor's context, loaded if need be.
    public func model<T: PersistentModel>(for id: PersistentIdentifier, as type: T.Type) async throws -> T? {
        try await modelContext.model(for: id, as: type)
    }

    /// SwiftData's `self[id, as: T.self]` in a model actor: the object with `id`, loaded if need
    /// be; nil if there is none, or it is not a `T`.
    public subscript<T: PersistentModel>(_ id: PersistentIdentifier, as type: T.Type) -> T? {
        get async throws { try await modelContext.model(for: id, as: type) }
    }
}
