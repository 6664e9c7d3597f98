import Foundation
import GRPCCore
import ModelCore
import ModelStorage
import ModelWire

/// modeld.v1.StoreService: creating, listing, dropping stores and setting their schemas.
struct StoreServiceHandler: Modeld_V1_StoreService.SimpleServiceProtocol {
    let core: DaemonCore

    func createStore(request: Modeld_V1_CreateStoreRequest, context: ServerContext) async throws -> Modeld_V1_StoreInfo
    {
        try await core.rpc.handle("CreateStore") {
            if !request.url.isEmpty { try checkMayAttach(Caller.current) }
            let backend: String
            if !request.backend.isEmpty {
                backend = request.backend.lowercased()
                if !request.url.isEmpty { try checkBackend(backend, agreesWith: request.url) }
            } else {
                backend =
                    switch request.kind {
                    case .sqlite: core.configuration.defaultBackend
                    case .memory: "memory"
                    case .other, .UNRECOGNIZED:
                        if !request.url.isEmpty {
                            ""
                        } else {
                            throw ModelError(
                                .invalidArgument,
                                "store kind \(request.kind.rawValue) names no backend: set backend (a URL scheme such as sqlite or memory) or url"
                            )
                        }
                    }
            }
            let schema = request.hasSchema ? try Schema(wire: request.schema) : nil
            try schema?.validate()
            let store = try await core.catalog.create(
                name: request.name, backend: backend, url: request.url.isEmpty ? nil : request.url,
                schema: schema, owner: Caller.current.uid)
            core.logger.info("created \(store.backend) store '\(store.name)' at \(store.location)")
            // A store made at a URL may be one that exists (attached, or joined): its history is read.
            return try await core.info(store, isNew: request.url.isEmpty)
        }
    }

    /// Refuses a store at a URL of its own to any caller but an administrator: the daemon opens
    /// it with its own rights (a file its user may read and delete, a PostgreSQL role it logs in
    /// as), which would let any caller read, and by dropping it delete, what only the daemon may.
    private func checkMayAttach(_ caller: Caller) throws(ModelError) {
        guard !core.access.isAdministrator(caller) else { return }
        throw ModelError(
            .permissionDenied,
            "user \(caller.description) may not create a store at a URL of its own: modeld would open it with its own rights (its user's files, its PostgreSQL role), so only administrators may (root, the daemon's user, modeld --admin-group); without a URL the daemon places the store in its data directory",
            context: ["uid": String(caller.uid)])
    }

    /// Refuses a backend named beside a URL whose scheme is another backend's: the URL decides,
    /// and the caller asked for something else (a memory store, say, and would get a file).
    private func checkBackend(_ backend: String, agreesWith url: String) throws(ModelError) {
        let registry = core.catalog.registry
        let location = try registry.location(parsing: url)
        guard type(of: try registry.factory(for: backend)) == type(of: try registry.factory(for: location.scheme))
        else {
            throw ModelError(
                .invalidArgument,
                "backend '\(backend)' and url \(location) name different backends: a store at a URL is of its scheme's backend ('\(location.scheme)'); leave backend out, or give a URL of its scheme",
                context: ["backend": backend, "url": location.description])
        }
    }

    func listStores(request: Modeld_V1_ListStoresRequest, context: ServerContext) async throws
        -> Modeld_V1_ListStoresResponse
    {
        try await core.rpc.handle("ListStores") {
            var response = Modeld_V1_ListStoresResponse()
            for store in core.catalog.all() where core.mayRead(store.name) {
                do {
                    response.stores.append(try await core.info(store))
                } catch let error as ModelError where error.code == .notFound {
                    continue // dropped while the list was made
                }
            }
            return response
        }
    }

    func getStore(request: Modeld_V1_GetStoreRequest, context: ServerContext) async throws -> Modeld_V1_StoreInfo {
        try await core.rpc.handle("GetStore") {
            try await core.info(try core.store(request.name, whileMigrating: true, for: .read))
        }
    }

    func dropStore(request: Modeld_V1_DropStoreRequest, context: ServerContext) async throws
        -> Modeld_V1_DropStoreResponse
    {
        try await core.rpc.handle("DropStore") {
            if core.catalog.isUnopened(request.name) {
                // Its data could not be opened at start-up: dropping it removes that data.
                try core.checkMayManageUnopened(request.name)
                try await core.catalog.dropUnopened(name: request.name)
                core.logger.info("dropped store '\(request.name)', which could not be opened at start-up")
                return Modeld_V1_DropStoreResponse()
            }
            let store = try core.store(request.name, for: .manage)
            let open = core.sessions.count(on: store.name)
            if open > 0, !request.force {
                throw ModelError(
                    .inUse,
                    "store '\(store.name)' has \(open) open session(s); close them first, or drop with force to close them",
                    context: ["store": store.name])
            }
            let closed = await core.sessions.end(
                where: { $0.store === store }, reason: "was closed: its store '\(store.name)' was dropped")
            try await core.catalog.drop(name: store.name)
            core.metrics.storeDropped(store.name)
            core.logger.info("dropped store '\(store.name)'\(closed > 0 ? ", closing \(closed) session(s)" : "")")
            return Modeld_V1_DropStoreResponse.with { $0.closedSessions = Int64(closed) }
        }
    }

    func getSchema(request: Modeld_V1_GetSchemaRequest, context: ServerContext) async throws
        -> Modeld_V1_GetSchemaResponse
    {
        try await core.rpc.handle("GetSchema") {
            let store = try core.store(request.store, whileMigrating: true, for: .read)
            // Another process may have migrated the store: what it holds is shown, and served
            // (not while a staged migration of this daemon holds it).
            if (try? store.checkAvailable()) != nil { await core.refreshSchema(of: store) }
            let schema = store.container.schema
            return Modeld_V1_GetSchemaResponse.with {
                $0.schema = schema.schema.wire
                $0.versionHash = schema.entityNames.isEmpty ? "" : schema.versionHash
            }
        }
    }

    func applySchema(request: Modeld_V1_ApplySchemaRequest, context: ServerContext) async throws -> Modeld_V1_StoreInfo
    {
        try await core.rpc.handle("ApplySchema") {
            let store = try core.store(request.store, for: .manage)
            let schema = try Schema(wire: request.schema)
            try schema.validate()
            // A store without a schema takes any (nothing to migrate, nothing to record); its
            // answer names what it made as a dry run's plan would, from no schema ("").
            let hadSchema = !store.container.schema.entityNames.isEmpty
            if !hadSchema, !request.dryRun {
                let (_, plan) = try await core.catalog.migrate(
                    store.name, to: schema, options: MigrationOptions(dryRun: true, allowDataLoss: false, author: nil)
                ) { _ in }
                let updated = try await core.catalog.apply(schema: schema, to: store.name)
                var info = try await core.info(updated)
                info.migration = plan.wire(applied: true)
                info.migration.fromVersion = ""
                return info
            }
            let options = MigrationOptions(
                dryRun: request.dryRun, allowDataLoss: request.allowDataLoss,
                author: request.author.isEmpty ? nil : request.author)
            let (updated, plan) = try await core.catalog.migrate(store.name, to: schema, options: options) { plan in
                // Sessions work with the old schema: they end before the store changes, and
                // their next call hears why.
                let closed = await core.sessions.end(
                    where: { $0.store === store },
                    reason:
                        "was closed: its store '\(store.name)' migrated to schema version \(plan.toVersion.prefix(12)) (from \(plan.fromVersion.prefix(12))); what it had not saved was discarded",
                    code: .schemaMismatch)
                core.logger.info(
                    "migrating store '\(store.name)' to schema \(plan.toVersion.prefix(12)): \(plan.steps.count) step(s)\(closed > 0 ? ", closing \(closed) session(s)" : "")"
                )
            }
            var info = try await core.info(updated)
            info.migration = plan.wire(applied: !request.dryRun && !plan.isEmpty)
            if !hadSchema { info.migration.fromVersion = "" }
            return info
        }
    }

    func setHistoryRetention(request: Modeld_V1_SetHistoryRetentionRequest, context: ServerContext) async throws
        -> Modeld_V1_StoreInfo
    {
        try await core.rpc.handle("SetHistoryRetention") {
            let store = try core.store(request.store, whileMigrating: true, for: .manage)
            var setting = RetentionSetting()
            func apply(_ value: Int64, _ what: String) throws(ModelError) -> Int64? {
                guard value >= -1 else {
                    throw ModelError(
                        .invalidArgument,
                        "\(what) \(value) is not a retention: a positive limit, 0 to keep everything, or -1 to follow the daemon's",
                        context: ["store": store.name])
                }
                return value == -1 ? nil : value
            }
            let age = request.hasAgeSeconds ? try apply(request.ageSeconds, "age_seconds") : nil
            let transactions = request.hasTransactions ? try apply(request.transactions, "transactions") : nil
            setting = try await core.catalog.changeRetention(of: store.name) { setting in
                if request.hasAgeSeconds { setting.ageSeconds = age }
                if request.hasTransactions { setting.transactions = transactions }
            }
            // 0 keeps everything.
            func describe(_ value: Int64?, _ unit: String) -> String {
                value.map { $0 == 0 ? "no limit" : "\($0)\(unit)" } ?? "the daemon's"
            }
            core.logger.info(
                "history retention of '\(store.name)': age \(describe(setting.ageSeconds, " s")), transactions \(describe(setting.transactions, ""))"
            )
            return try await core.info(store)
        }
    }
}
