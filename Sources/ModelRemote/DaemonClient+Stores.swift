import Foundation
import ModelCore
import ModelWire

extension DaemonClient {
    /// Creates a store (an SQLite file in the daemon's data directory, or in memory), with a
    /// schema when given.
    @discardableResult
    public func createStore(_ name: String, kind: StoreInfo.Kind = .sqlite, schema: Schema? = nil) async throws
        -> StoreInfo
    {
        try await createStore(name, backend: kind == .memory ? "memory" : nil, schema: schema)
    }

    /// Creates a store on the daemon's backend of scheme `backend` (its default when nil), placed
    /// by the daemon; or at `url`, a backend URL (attached when a store is there already).
    @discardableResult
    public func createStore(_ name: String, backend: String?, url: String? = nil, schema: Schema? = nil) async throws
        -> StoreInfo
    {
        try await call {
            let request = Modeld_V1_CreateStoreRequest.with {
                $0.name = name
                if let backend { $0.backend = backend }
                if let url { $0.url = url }
                if let schema { $0.schema = schema.wire }
            }
            return try StoreInfo(wire: try await unary(Modeld_V1_StoreService.Method.CreateStore.self, request))
        }
    }

    /// Every store, by name.
    public func stores() async throws -> [StoreInfo] {
        try await call(small: true) {
            var infos: [StoreInfo] = []
            for store in try await unary(Modeld_V1_StoreService.Method.ListStores.self, Modeld_V1_ListStoresRequest())
                .stores
            { infos.append(try StoreInfo(wire: store)) }
            return infos
        }
    }

    /// One store.
    public func store(_ name: String) async throws -> StoreInfo {
        try await call(small: true) {
            try StoreInfo(
                wire: try await unary(
                    Modeld_V1_StoreService.Method.GetStore.self, Modeld_V1_GetStoreRequest.with { $0.name = name }))
        }
    }

    /// Drops a store and its data; with `force`, closes its sessions first. Returns how many
    /// sessions that closed.
    @discardableResult
    public func dropStore(_ name: String, force: Bool = false) async throws -> Int {
        try await call(small: true) {
            let response = try await unary(
                Modeld_V1_StoreService.Method.DropStore.self,
                Modeld_V1_DropStoreRequest.with {
                    $0.name = name
                    $0.force = force
                })
            return Int(response.closedSessions)
        }
    }

    /// A store's schema.
    public func schema(of store: String) async throws -> Schema {
        try await call(small: true) {
            try Schema(
                wire: try await unary(
                    Modeld_V1_StoreService.Method.GetSchema.self, Modeld_V1_GetSchemaRequest.with { $0.store = store }
                ).schema)
        }
    }

    /// Sets a store's schema; see ``migrateSchema(of:to:dryRun:allowDataLoss:author:)``, which
    /// this is with its defaults, answering with the store alone.
    @discardableResult
    public func applySchema(_ schema: Schema, to store: String) async throws -> StoreInfo {
        try await migrateSchema(of: store, to: schema).store
    }

    /// Sets a store's schema. A store without a schema takes any; one with a schema migrates to
    /// the new one by inference, in one transaction recorded in history (by `author`), or
    /// refuses with `schemaMismatch` listing why (steps that delete stored values need
    /// `allowDataLoss`). With `dryRun`, only plans: the answer's migration has the steps and
    /// refusals, and nothing changes. The store's open sessions end when it migrates.
    @discardableResult
    public func migrateSchema(
        of store: String, to schema: Schema, dryRun: Bool = false, allowDataLoss: Bool = false, author: String? = nil
    ) async throws -> SchemaApplication {
        try await call {
            let wire = try await unary(
                Modeld_V1_StoreService.Method.ApplySchema.self,
                Modeld_V1_ApplySchemaRequest.with {
                    $0.store = store
                    $0.schema = schema.wire
                    $0.dryRun = dryRun
                    $0.allowDataLoss = allowDataLoss
                    $0.author = author ?? ""
                })
            let plan = wire.hasMigration ? try MigrationPlan(wire: wire.migration) : nil
            return SchemaApplication(
                store: try StoreInfo(wire: wire), migration: plan, migrationApplied: wire.migration.applied)
        }
    }

    /// The daemon's version and load.
    public func status() async throws -> DaemonStatus {
        try await call(small: true) {
            DaemonStatus(wire: try await unary(Modeld_V1_DaemonService.Method.Status.self, Modeld_V1_StatusRequest()))
        }
    }

    /// The daemon's metrics, in Prometheus's text exposition format.
    public func metrics() async throws -> String {
        try await call(small: true) {
            try await unary(Modeld_V1_DaemonService.Method.Metrics.self, Modeld_V1_MetricsRequest()).text
        }
    }

    /// Sets how much history `store` keeps, over the daemon's retention: each limit given
    /// replaces the store's setting of it (nil leaves it as it is). Returns the store as it is now.
    @discardableResult
    public func setHistoryRetention(
        of store: String, age: StoreInfo.RetentionLimit? = nil, transactions: StoreInfo.RetentionLimit? = nil
    ) async throws -> StoreInfo {
        try await call(small: true) {
            let request = Modeld_V1_SetHistoryRetentionRequest.with {
                $0.store = store
                if let age { $0.ageSeconds = age.wire }
                if let transactions { $0.transactions = transactions.wire }
            }
            return try StoreInfo(
                wire: try await unary(Modeld_V1_StoreService.Method.SetHistoryRetention.self, request))
        }
    }

    /// Grants `principal` read access to `store`, or read and write with `write`; the store's
    /// owner or an administrator may. Returns the store as it is now.
    @discardableResult
    public func grantAccess(to principal: StoreInfo.AccessGrant.Principal, on store: String, write: Bool) async throws
        -> StoreInfo
    {
        try await call(small: true) {
            let request = Modeld_V1_GrantAccessRequest.with {
                $0.store = store
                $0.grant.principal = principal.wire
                $0.grant.level = write ? .write : .read
            }
            return try StoreInfo(wire: try await unary(Modeld_V1_StoreService.Method.GrantAccess.self, request))
        }
    }

    /// Takes back what `principal` was granted on `store`.
    @discardableResult
    public func revokeAccess(from principal: StoreInfo.AccessGrant.Principal, on store: String) async throws
        -> StoreInfo
    {
        try await call(small: true) {
            let request = Modeld_V1_RevokeAccessRequest.with {
                $0.store = store
                $0.principal = principal.wire
            }
            return try StoreInfo(wire: try await unary(Modeld_V1_StoreService.Method.RevokeAccess.self, request))
        }
    }
}

extension StoreInfo.AccessGrant.Principal {
    var wire: Modeld_V1_AccessPrincipal {
        switch self {
        case .user(let name): .with { $0.user = name }
        case .group(let name): .with { $0.group = name }
        }
    }
}
