import Foundation
import ModelCore
import ModelStorage

/// A store opened with its schema: what contexts work on. Core Data's persistent container,
/// SwiftData's `ModelContainer`, for use in-process (the daemon builds its sessions on it too).
public final class ModelContainer: Sendable {
    /// The store's backend.
    public let backend: any StorageBackend
    /// The store's schema.
    public let schema: ResolvedSchema

    /// The store's UUID, the same in every process that opens it.
    public var storeIdentifier: UUID { backend.storeIdentifier }

    private init(backend: any StorageBackend, schema: ResolvedSchema) {
        self.backend = backend
        self.schema = schema
    }

    /// Opens the store at `url` (`sqlite:///abs/path.sqlite`, `memory:name`). With a schema,
    /// a new or empty store takes it, and a store holding objects of another schema is refused
    /// with `schemaMismatch` listing the differences (there are no migrations yet). Without one,
    /// the store's own schema is used.
    public static func open(url: String, schema: Schema? = nil, registry: StorageRegistry) async throws
        -> ModelContainer
    {
        let backend = try await registry.open(url: url, applying: schema)
        do {
            return try await open(backend: backend)
        } catch {
            await backend.close()
            throw error
        }
    }

    /// Wraps an open backend, applying `schema` as ``open(url:schema:registry:)`` does.
    public static func open(backend: any StorageBackend, schema: Schema? = nil) async throws -> ModelContainer {
        if let schema {
            try await backend.apply(schema: schema)
        }
        return ModelContainer(backend: backend, schema: try await backend.schema())
    }

    /// A new context (unit of work) on this store. A context made for one save and then dropped
    /// passes `retainsSavedObjects: false`: its saves then do not keep what they wrote as the
    /// objects it knows (work that only a context used again needs).
    public func makeContext(
        author: String? = nil, mergePolicy: MergePolicy = .error,
        uniquenessPolicy: UniquenessPolicy = .error, retainsSavedObjects: Bool = true
    ) -> ModelContext {
        ModelContext(
            container: self, author: author, mergePolicy: mergePolicy, uniquenessPolicy: uniquenessPolicy,
            retainsSavedObjects: retainsSavedObjects)
    }

    /// History transactions after `token` (from the start when nil), oldest first.
    public func history(after token: HistoryToken?, limit: Int? = nil) async throws -> [HistoryTransaction] {
        try await backend.history(after: token, limit: limit)
    }

    /// The token of the latest saved transaction.
    public func currentHistoryToken() async throws -> HistoryToken? {
        try await backend.currentHistoryToken()
    }

    /// Closes the store.
    public func close() async {
        await backend.close()
    }

    /// Closes the store whose data is deleted next (see `StorageBackend.closeForRemoval()`).
    public func closeForRemoval() async {
        await backend.closeForRemoval()
    }
}
