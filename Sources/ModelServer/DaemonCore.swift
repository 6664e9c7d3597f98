import FramedTransport
import Foundation
import GRPCCore
import Logging
import ModelCore
import ModelEngine
import ModelWire
import Prometheus

/// What every service of a daemon shares: its configuration, stores, sessions, streams, the
/// limits on its connections, and its logger.
final class DaemonCore: Sendable {
    let configuration: ServerConfiguration
    let catalog: StoreCatalog
    let sessions: SessionRegistry
    let streams: StreamRegistry
    /// What the watches hold, against `--max-watch-memory`.
    let watchMemory: WatchMemory
    /// What both transports hold to: connections, request bytes, timeouts.
    let limits: ConnectionLimits
    let descriptors: DescriptorBudget
    let logger: Logger
    let rpc: RPCHandling
    /// Who may do what to which store.
    let access: AccessPolicy
    let startedAt = ContinuousClock.now

    /// The daemon's metrics (``DaemonMetrics``).
    var metrics: DaemonMetrics { rpc.metrics }

    init(configuration: ServerConfiguration, logger: Logger) {
        self.configuration = configuration
        let descriptors = DescriptorBudget(
            limit: configuration.fileDescriptorLimit ?? DescriptorBudget.currentLimit(),
            configuredConnections: configuration.maximumConnections,
            streamingFetches: configuration.maximumStreamingFetches)
        self.descriptors = descriptors
        self.catalog = StoreCatalog(
            directory: URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("stores"),
            registry: configuration.registry, maximumStoreSize: configuration.maximumStoreSize,
            maximumStores: descriptors.maximumStores)
        self.sessions = SessionRegistry(
            maximumSessions: configuration.maximumSessions, idleTimeout: configuration.idleTimeout)
        self.streams = StreamRegistry(
            maximumStreamingFetches: configuration.maximumStreamingFetches,
            stallTimeout: configuration.streamStallTimeout)
        self.watchMemory = WatchMemory(capacity: configuration.maximumWatchMemory)
        let refusals = RefusalLog(logger: logger, descriptors: descriptors)
        self.limits = ConnectionLimits(
            maximumMessageSize: configuration.maximumMessageSize, requestTimeout: configuration.requestTimeout,
            idleTimeout: configuration.connectionIdleTimeout,
            requestBudget: RequestBudget(capacity: configuration.maximumPendingRequestBytes),
            connections: ConnectionLimit(maximum: descriptors.maximumConnections, onRefusal: refusals.refused))
        self.logger = logger
        self.access = AccessPolicy(daemonUID: getuid(), administrators: configuration.administratorsGroup)
        let (catalog, sessions) = (catalog, sessions)
        self.rpc = RPCHandling(
            logger: logger,
            metrics: DaemonMetrics(registry: configuration.metricsRegistry ?? PrometheusCollectorRegistry())
        ) { version in
            for store in catalog.all() where store.container.schema.versionHash == version {
                await Self.refreshSchema(of: store, catalog: catalog, sessions: sessions, logger: logger)
            }
        }
    }

    /// Serves `store` with the schema it holds now, when another process (a daemon sharing it, an
    /// embedded stack) migrated it since this daemon read it: its sessions, made for the old
    /// schema, end, and their next call hears why, as after a migration made here.
    static func refreshSchema(of store: StoreHandle, catalog: StoreCatalog, sessions: SessionRegistry, logger: Logger)
        async
    {
        do {
            _ = try await catalog.refreshSchema(of: store) { from, to in
                let closed = await sessions.end(
                    where: { $0.store === store },
                    reason:
                        "was closed: its store '\(store.name)' was migrated to schema version \(to.prefix(12)) (from \(from.prefix(12))) by another process; what it had not saved was discarded",
                    code: .schemaMismatch)
                logger.info(
                    "store '\(store.name)' was migrated to schema \(to.prefix(12)) by another process; serving it with that schema\(closed > 0 ? ", closing \(closed) session(s)" : "")"
                )
            }
        } catch {
            logger.warning("store '\(store.name)': its schema could not be read again: \(error)")
        }
    }

    /// ``refreshSchema(of:catalog:sessions:logger:)`` of one store: what a schema read does
    /// (GetSchema), so that it shows what the store holds.
    func refreshSchema(of store: StoreHandle) async {
        await Self.refreshSchema(of: store, catalog: catalog, sessions: sessions, logger: logger)
    }

    /// A store's description, as StoreInfo carries it. One just created (`isNew`) has no
    /// history yet, so its token is not read (which would open a reader on the new file).
    func info(_ store: StoreHandle, isNew: Bool = false) async throws -> Modeld_V1_StoreInfo {
        let container = store.container
        var info = Modeld_V1_StoreInfo()
        info.name = store.name
        info.uuid = container.storeIdentifier.uuidString.lowercased()
        info.kind =
            switch store.backend {
            case "sqlite": .sqlite
            case "memory": .memory
            default: .other
            }
        info.backend = store.backend
        info.url = store.location.description
        info.entities = container.schema.entityNames
        info.schemaVersionHash = info.entities.isEmpty ? "" : container.schema.versionHash
        do {
            if !isNew, let token = try await container.currentHistoryToken() { info.historyToken = token.rawValue }
        } catch let error as ModelError where error.code == .closed {
            // Dropped while we looked.
            throw ModelError(
                .notFound, "no store named '\(store.name)': it was just dropped", context: ["store": store.name])
        } catch let error as ModelError where error.code == .unavailable {
            // Its server is down: the rest of what is known of it is told, and why not its token.
            info.unavailable = error.message
        }
        info.openSessions = Int64(sessions.count(on: store.name))
        let retention = catalog.retention.effective(
            for: store.name, daemonAge: configuration.historyRetentionAge,
            daemonTransactions: configuration.historyRetentionCount)
        if let record = catalog.access.record(for: store.name) {
            info.owner = UnixAccounts.user(uid: record.owner)?.name ?? "uid \(record.owner)"
            info.grants = record.grants.map { grant in
                .with {
                    $0.principal = grant.principal.wire
                    $0.level = grant.level == .write ? .write : .read
                }
            }
        }
        info.historyRetention = .with {
            if let age = retention.age { $0.ageSeconds = age.components.seconds }
            if let count = retention.transactions { $0.transactions = Int64(count) }
            $0.ageIsTheStores = retention.ageIsTheStores
            $0.transactionsIsTheStores = retention.transactionsIsTheStores
        }
        // A store kept in a file (an SQLite store) names it.
        if let path = store.location.filePath { info.path = path }
        return info
    }

    /// Saves a context, wakes the store's history followers, and describes the result (with the
    /// transaction written, when asked).
    func save(
        _ context: ModelContext, applying edits: [ObjectEdit] = [], store: StoreHandle,
        returnTransaction: Bool
    ) async throws -> SaveResponse {
        try await response(
            to: try await context.save(applying: edits), store: store, returnTransaction: returnTransaction)
    }

    /// The answer to a save that gave `result`: it tells the store's watches and wakes its history followers, and
    /// carries the saved transaction when `returnTransaction`. An `Apply` of insert runs (the usual
    /// save) that asks for no transaction is answered by ``announced(_:store:)`` without this call:
    /// an async call's frame comes from its task's allocator, and this one's (about 1,400 bytes)
    /// took a slab from malloc in every such save's task.
    nonisolated(nonsending) func response(to result: SaveResult, store: StoreHandle, returnTransaction: Bool)
        async throws -> SaveResponse
    {
        let response = announced(result, store: store)
        guard returnTransaction, let token = result.token else { return response }
        let transaction = try await store.container.history(after: HistoryToken(token.rawValue - 1), limit: 1).first
        return SaveResponse(result, transaction: transaction)
    }

    /// The answer to a save that gave `result`, without its transaction: tells the store's watches
    /// and wakes its history followers when the save wrote one.
    func announced(_ result: SaveResult, store: StoreHandle) -> SaveResponse {
        if let token = result.token {
            metrics.saved(in: store.name)
            store.watches.saved(token, touching: result.touchedEntities)
            store.history.notify()
        }
        return SaveResponse(result)
    }

    /// The store a request names; UNAVAILABLE while a staged migration holds it, unless
    /// `whileMigrating` (a description of the store as it was).
    func store(_ name: String, whileMigrating: Bool = false, for need: AccessNeed) throws(ModelError) -> StoreHandle {
        let handle = try catalog.handle(named: name)
        try checkAccess(need, to: handle.name)
        if !whileMigrating { try handle.checkAvailable() }
        return handle
    }

    /// PERMISSION_DENIED unless the current call's caller may do what `need` says to the store.
    func checkAccess(_ need: AccessNeed, to store: String) throws(ModelError) {
        let record = catalog.access.record(for: store)
        let caller = Caller.current
        guard access.allows(caller, need, record) else {
            throw access.refusal(caller, need, store: store, record: record)
        }
    }

    /// After a save named an entity or property `store`'s served schema lacks: whether another
    /// process (a daemon sharing the store, an embedded stack) migrated the store since this
    /// daemon read its schema. If it did, the store is served with the schema it holds from now
    /// on, as after a save the backend refused as stale, and the answer is that save's
    /// `schemaMismatch`, telling the caller to send it again; nil when the schema is the same.
    func migratedElsewhere(_ store: StoreHandle) async -> ModelError? {
        let served = store.container.schema.versionHash
        await Self.refreshSchema(of: store, catalog: catalog, sessions: sessions, logger: logger)
        let now = store.container.schema.versionHash
        guard now != served else { return nil }
        return ModelError(
            .schemaMismatch,
            "the store was migrated to schema version \(now.prefix(12)) by another process since this daemon read it (version \(served.prefix(12))); nothing was saved: send it again for the new schema (a session opened before the migration is closed: open another)",
            context: ["store": store.name, "storeVersion": now, "requestedVersion": served])
    }

    /// PERMISSION_DENIED unless the current call's caller may drop, or restore over, the store
    /// `name` whose data could not be opened at start-up: its owner, by access.json's record;
    /// without one (the owner an SQLite store keeps in itself could not be read), only an
    /// administrator.
    func checkMayManageUnopened(_ name: String) throws(ModelError) {
        let caller = Caller.current
        guard catalog.access.record(for: name) != nil || access.isAdministrator(caller) else {
            throw ModelError(
                .permissionDenied,
                "user \(caller.description) may not manage the store '\(name)': its data could not be opened, so its owner is not known; an administrator may drop it or restore over it",
                context: ["store": name, "uid": String(caller.uid)])
        }
        try checkAccess(.manage, to: name)
    }

    /// Whether the current call's caller may read the store (what ListStores shows).
    func mayRead(_ store: String) -> Bool {
        access.allows(Caller.current, .read, catalog.access.record(for: store))
    }

    /// The session a request names; UNAVAILABLE while a staged migration holds its store,
    /// unless it is that migration's session. Its opener must still be let read its store: a
    /// revoke (or leaving a granted group) reaches a session opened before it at its next call;
    /// but closing it (`mustRead` false) is left to its opener, who may have lost that.
    func session(_ id: String, mustRead: Bool = true) throws(ModelError) -> Session {
        let session = try sessions.session(id)
        let caller = Caller.current
        guard caller.uid == session.owner || access.isAdministrator(caller) else {
            throw ModelError(
                .permissionDenied,
                "session \(id) belongs to another user (uid \(session.owner)); user \(caller.description) may use only its own",
                context: ["session": id, "uid": String(caller.uid)])
        }
        if mustRead { try checkAccess(.read, to: session.store.name) }
        try session.store.checkAvailable(forSession: id)
        return session
    }
}

extension ModelError {
    /// Whether the error is a request naming an entity or property the served schema lacks,
    /// which another process's migration may have added (``DaemonCore/migratedElsewhere(_:)``).
    var namesWhatTheSchemaLacks: Bool { code == .unknownProperty || code == .unknownEntity }
}
