import ModelCore
import ModelEngine
import ModelStorage
import StandardBackends

/// A store opened in this process with ModelEngine (`sqlite:///path`, `memory:`): the same
/// engine the daemon runs, so a file can be shared with a daemon, or with another process.
final class EmbeddedStore: StoreConnection {
    let container: ModelEngine.ModelContainer
    /// The watches of this container (live queries): told of its saves, and polling for other
    /// processes'.
    let watches: WatchHub
    /// Woken by this container's saves, for history followers.
    let saves = HistorySignal()

    private init(container: ModelEngine.ModelContainer) {
        self.container = container
        watches = WatchHub(backend: container.backend)
    }

    /// Opens the store at `url` for `models`: a new store takes their schema; one of another
    /// version moves through `migrationPlan`'s stages when it is at one of its versions (one
    /// staged migration), or migrates by inference.
    static func open(
        url: String, models: ModelTypes, migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
        configuration: ModelConfiguration
    ) async throws -> EmbeddedStore {
        guard let migrationPlan else {
            return EmbeddedStore(
                container: try await ModelEngine.ModelContainer.open(
                    url: url, schema: models.schema, registry: .standard))
        }
        let backend = try await StorageRegistry.standard.open(url: url, applying: nil)
        do {
            let current = try await backend.schema()
            if current.entityNames.isEmpty {
                try await backend.apply(schema: models.schema)
            } else if current.versionHash != models.resolved.versionHash {
                if let legs = try MigrationRunner.route(migrationPlan, from: current.versionHash, to: models) {
                    let migration = try await backend.beginStagedMigration(author: nil)
                    try await MigrationRunner.run(
                        legs, to: models, configuration: configuration,
                        driver: EmbeddedMigrationDriver(migration: migration))
                } else {
                    _ = try await backend.migrate(to: models.schema, options: MigrationOptions())
                }
            }
            return EmbeddedStore(container: try await ModelEngine.ModelContainer.open(backend: backend))
        } catch {
            await backend.close()
            throw error
        }
    }

    var storeIdentifier: UUID { container.storeIdentifier }

    func openContext(_ settings: ContextSettings) async throws -> any ContextConnection {
        EngineContext(
            context: container.makeContext(
                author: settings.author, mergePolicy: settings.mergePolicy,
                uniquenessPolicy: settings.uniquenessPolicy),
            container: container,
            watches: watches, saves: saves
        )
    }

    func deleteHistory(through token: HistoryToken) async throws {
        try await container.deleteHistory(through: token)
    }

    /// Reads history page by page; when it has read all of it, waits for a save through this
    /// container or for the next poll (saves by other processes on the file), every 100 ms.
    func followHistory(
        after token: HistoryToken?, author: String?,
        _ body: @Sendable @escaping (HistoryTransaction) async throws -> Void
    ) async throws {
        var cursor = token
        while true {
            try Task.checkCancellation()
            let generation = saves.generation
            let page = try await container.history(after: cursor, limit: 256)
            for transaction in page where author == nil || transaction.author == author { try await body(transaction) }
            cursor = page.last?.token ?? cursor
            if page.count < 256 { await saves.waitForChange(after: generation, orFor: .milliseconds(100)) }
        }
    }

    func batchUpdate(
        _ entity: String, where predicate: ModelCore.Predicate?, set attributes: [String: Value], author: String?
    ) async throws -> Int {
        let (matched, result) = try await container.batchUpdate(
            entity, where: predicate, set: attributes, author: author)
        watches.saved(result.token, touching: result.touchedEntities)
        if result.token != nil { saves.notify() }
        return matched
    }

    func fetchSaved(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult {
        try await container.backend.fetch(descriptor, overlay: nil)
    }

    func aggregateSaved(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow] {
        try await container.backend.aggregate(descriptor, overlay: nil)
    }

    func history(after token: HistoryToken?, author: String?, limit: Int?) async throws -> [HistoryTransaction] {
        guard let author else { return try await container.history(after: token, limit: limit) }
        // The engine reads history in order; keep the author's transactions, page by page.
        var found: [HistoryTransaction] = []
        var cursor = token
        while limit.map({ found.count < $0 }) ?? true {
            let page = try await container.history(after: cursor, limit: 500)
            guard let last = page.last else { break }
            found += page.filter { $0.author == author }
            cursor = last.token
        }
        return limit.map { Array(found.prefix($0)) } ?? found
    }

    func currentHistoryToken() async throws -> HistoryToken? {
        try await container.currentHistoryToken()
    }

    func watch(_ query: WatchedQuery, _ body: @Sendable @escaping (WatchUpdate) async throws -> Void) async throws {
        let watch = try QueryWatch(query, on: container, hub: watches)
        while true { try await body(try await watch.next()) }
    }

    func close() async {
        watches.close(with: ModelError(.closed, "the container was closed"))
        await container.close()
    }
}

/// A context's unit of work in-process: an engine context.
final class EngineContext: ContextConnection {
    let context: ModelEngine.ModelContext
    let container: ModelEngine.ModelContainer
    /// The watches and history followers told of this context's saves (none for a migration's context).
    let watches: WatchHub?
    let saves: HistorySignal?

    init(
        context: ModelEngine.ModelContext, container: ModelEngine.ModelContainer, watches: WatchHub?,
        saves: HistorySignal?
    ) {
        self.context = context
        self.container = container
        self.watches = watches
        self.saves = saves
    }

    func stage(_ edits: [ObjectEdit]) async throws {
        _ = try await context.apply(edits)
    }

    func save(applying edits: [ObjectEdit]) async throws -> SaveReport {
        let result = try await context.save(applying: edits)
        watches?.saved(result.token, touching: result.touchedEntities)
        if result.token != nil { saves?.notify() }
        var transaction: HistoryTransaction?
        if let token = result.token {
            transaction = try await container.history(after: HistoryToken(token.rawValue - 1), limit: 1).first
        }
        return SaveReport(
            remapped: result.remappedIdentifiers, token: result.token, transaction: transaction,
            versions: result.versions.filter { $0.value > 1 })
    }

    func rollback() async throws {
        await context.rollback()
    }

    func fetch(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult {
        try await context.fetch(descriptor)
    }

    func count(_ descriptor: ModelCore.FetchDescriptor) async throws -> Int {
        try await context.count(descriptor)
    }

    func aggregate(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow] {
        try await context.aggregate(descriptor)
    }

    func close() async {}
}
