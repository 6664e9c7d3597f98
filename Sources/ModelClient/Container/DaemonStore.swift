import ModelCore
import ModelRemote
import Synchronization

/// A store served by `modeld`: one connection to the daemon per container, one session per context.
final class DaemonStore: StoreConnection {
    let client: DaemonClient
    let store: String
    let storeIdentifier: UUID
    /// The sessions of this container's contexts, closed with it.
    private let sessions = Mutex<[String: RemoteSession]>([:])

    private init(client: DaemonClient, store: String, storeIdentifier: UUID) {
        self.client = client
        self.store = store
        self.storeIdentifier = storeIdentifier
    }

    /// Connects, and makes sure the store exists with `schema`: a new store is created with it,
    /// and a store of another schema migrates to it as SwiftData's container does — what can be
    /// inferred, nothing that deletes stored values — or refuses, saying why (docs/migrations.md).
    /// With a migration plan, a store at one of its versions moves through its stages in one
    /// staged migration (``MigrationRunner``); a store at another version migrates by inference.
    static func open(
        socketPath: String, store: String, models: ModelTypes, migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
        configuration: ModelConfiguration
    ) async throws -> DaemonStore {
        let schema = models.schema, versionHash = models.resolved.versionHash
        let client = try DaemonClient.connect(socketPath: socketPath)
        do {
            var info: StoreInfo
            do {
                info = try await client.store(store)
            } catch let error as ModelError where error.code == .notFound {
                do {
                    info = try await client.createStore(store, schema: schema)
                } catch let error as ModelError where error.code == .uniqueConstraint {
                    // Another opener made it first: open the one it made.
                    info = try await client.store(store)
                }
            }
            if info.schemaVersionHash != versionHash {
                if let migrationPlan, !info.schemaVersionHash.isEmpty,
                    let legs = try MigrationRunner.route(migrationPlan, from: info.schemaVersionHash, to: models)
                {
                    let migration = try await client.beginMigration(of: store)
                    try await MigrationRunner.run(
                        legs, to: models, configuration: configuration,
                        driver: DaemonMigrationDriver(migration: migration, client: client, store: store))
                    info = try await client.store(store)
                } else {
                    info = try await client.applySchema(schema, to: store)
                }
            }
            return DaemonStore(client: client, store: store, storeIdentifier: info.storeIdentifier)
        } catch {
            client.close()
            throw error
        }
    }

    func openContext(_ settings: ContextSettings) async throws -> any ContextConnection {
        let session = try await client.openSession(
            on: store, author: settings.author, mergePolicy: settings.mergePolicy,
            uniquenessPolicy: settings.uniquenessPolicy)
        sessions.withLock { $0[session.id] = session }
        return DaemonSession(session: session, client: client, store: store, owner: self)
    }

    func sessionClosed(_ id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }

    func deleteHistory(through token: HistoryToken) async throws {
        try await client.deleteHistory(through: token, in: store)
    }

    func followHistory(
        after token: HistoryToken?, author: String?,
        _ body: @Sendable @escaping (HistoryTransaction) async throws -> Void
    ) async throws {
        try await client.followHistory(after: token, in: store, author: author, follow: true, body)
    }

    func batchUpdate(
        _ entity: String, where predicate: ModelCore.Predicate?, set attributes: [String: Value], author: String?
    ) async throws -> Int {
        try await client.batchUpdate(entity, where: predicate, set: attributes, in: store, author: author).matched
    }

    func fetchSaved(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult {
        try await client.fetch(descriptor, in: store)
    }

    func aggregateSaved(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow] {
        try await client.aggregate(descriptor, in: store)
    }

    func history(after token: HistoryToken?, author: String?, limit: Int?) async throws -> [HistoryTransaction] {
        try await client.history(after: token, in: store, author: author, limit: limit ?? 0)
    }

    func currentHistoryToken() async throws -> HistoryToken? {
        try await client.store(store).historyToken
    }

    func watch(_ query: WatchedQuery, _ body: @Sendable @escaping (WatchUpdate) async throws -> Void) async throws {
        try await client.watch(query, in: store, storeIdentifier: storeIdentifier, body)
    }

    /// Ends the contexts' sessions (so the daemon is done with them when this returns, not
    /// when it notices the connection has gone), then the connection.
    func close() async {
        let open = sessions.withLock { sessions in
            defer { sessions.removeAll() }
            return Array(sessions.values)
        }
        await withTaskGroup(of: Void.self) { group in
            for session in open {
                group.addTask { _ = try? await session.close() }
            }
        }
        client.close()
    }
}

/// A context's session on the daemon.
final class DaemonSession: ContextConnection {
    let session: RemoteSession
    let client: DaemonClient
    let store: String
    /// The container's store, which keeps its sessions to close them; nil for a migration's.
    let owner: DaemonStore?

    init(session: RemoteSession, client: DaemonClient, store: String, owner: DaemonStore?) {
        self.session = session
        self.client = client
        self.store = store
        self.owner = owner
    }

    func stage(_ edits: [ObjectEdit]) async throws {
        try await session.stage(edits)
    }

    func save(applying edits: [ObjectEdit]) async throws -> SaveReport {
        let outcome = try await session.save(applying: edits, returnTransaction: true)
        var transaction = outcome.transaction
        if outcome.transactionIsTruncated, let token = outcome.token {
            transaction = try await client.history(after: HistoryToken(token.rawValue - 1), in: store, limit: 1).first
        }
        return SaveReport(
            remapped: outcome.remappedIdentifiers, token: outcome.token, transaction: transaction,
            versions: outcome.versions)
    }

    func rollback() async throws {
        try await session.rollback()
    }

    func fetch(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult {
        try await session.fetch(descriptor)
    }

    func count(_ descriptor: ModelCore.FetchDescriptor) async throws -> Int {
        try await session.count(descriptor)
    }

    func aggregate(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow] {
        try await session.aggregate(descriptor)
    }

    func close() async {
        owner?.sessionClosed(session.id)
        _ = try? await session.close()
    }
}
