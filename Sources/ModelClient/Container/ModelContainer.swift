import ModelCore

/// The models of an app and the store that keeps them, as SwiftData's `ModelContainer`: made
/// from model classes and a store URL (the daemon's socket, a SQLite file, or memory), it derives
/// the schema and opens the store with it. Make ``ModelContext``s on it. Sendable: share one
/// container, give each task or actor its own context.
public final class ModelContainer: Sendable {
    /// Where the store is.
    public let configuration: ModelConfiguration
    /// The schema derived from the models.
    public let schema: ModelCore.Schema
    /// The store's UUID: the host part of its objects' URIs, the same in every process.
    public let storeIdentifier: UUID
    let types: ModelTypes
    let store: any StoreConnection

    /// Opens the store at `url` for `types` (and the models their relationships lead to).
    /// Without a URL, the default daemon's `default` store.
    public convenience init(for types: any PersistentModel.Type..., url: URL? = nil) async throws {
        let configuration = url.map { ModelConfiguration(url: $0) } ?? ModelConfiguration()
        try await self.init(for: types, configuration: configuration)
    }

    /// Opens the store `configuration` names for `types`.
    public convenience init(for types: [any PersistentModel.Type], configuration: ModelConfiguration) async throws {
        try await self.init(for: types, migrationPlan: nil, configurations: [configuration])
    }

    /// Opens the store for `types`, moving it through `migrationPlan` when it is at an older
    /// version of the plan's, as SwiftData's container does: every stage from the store's version
    /// to `types`' in one staged migration, all or nothing (docs/migrations.md). A store at a
    /// version the plan does not know, or without a plan, migrates what can be inferred and
    /// refuses changes that delete stored values. One configuration (none: the default daemon's
    /// `default` store).
    public convenience init(
        for types: any PersistentModel.Type..., migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
        configurations: ModelConfiguration...
    ) async throws {
        try await self.init(for: types, migrationPlan: migrationPlan, configurations: configurations)
    }

    /// ``init(for:migrationPlan:configurations:)`` with the models as an array.
    public init(
        for types: [any PersistentModel.Type], migrationPlan: (any SchemaMigrationPlan.Type)?,
        configurations: [ModelConfiguration]
    ) async throws {
        guard configurations.count <= 1 else {
            throw ModelError(
                .invalidArgument,
                "a container opens one store: give it one configuration (\(configurations.count) were given)")
        }
        let configuration = configurations.first ?? ModelConfiguration()
        let modelTypes = try ModelTypes(types)
        self.types = modelTypes
        self.configuration = configuration
        self.schema = modelTypes.schema
        switch try configuration.location() {
        case .daemon(let socketPath, let name):
            store = try await DaemonStore.open(
                socketPath: socketPath, store: name, models: modelTypes, migrationPlan: migrationPlan,
                configuration: configuration)
        case .embedded(let url):
            store = try await EmbeddedStore.open(
                url: url, models: modelTypes, migrationPlan: migrationPlan, configuration: configuration)
        }
        storeIdentifier = store.storeIdentifier
    }

    /// A container of a migration stage's models over the migration's store.
    init(types: ModelTypes, configuration: ModelConfiguration, store: any StoreConnection) {
        self.types = types
        self.configuration = configuration
        self.schema = types.schema
        self.store = store
        self.storeIdentifier = store.storeIdentifier
    }

    /// The store URL.
    public var url: URL { configuration.url }

    /// A new context on the container (as `ModelContext(container)`).
    public func makeContext(author: String? = nil) -> ModelContext {
        let context = ModelContext(self)
        context.author = author
        return context
    }

    /// Closes the store (the connection to the daemon, or the file). Contexts can't be used after.
    public func close() async {
        await store.close()
    }

    /// The token of the latest saved transaction: history after it is what changes next.
    public func currentHistoryToken() async throws -> DefaultHistoryToken? {
        try await store.currentHistoryToken()
    }
}
