import Foundation
import ModelCore
import ModelWire

/// A store as the daemon describes it.
public struct StoreInfo: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, Codable {
        /// Another backend: see ``backend``.
        case sqlite, memory, other
    }

    public var name: String
    /// The store's UUID: the host part of its objects' URIs.
    public var storeIdentifier: UUID
    public var kind: Kind
    /// "" while the store has no schema.
    public var schemaVersionHash: String
    public var entities: [String]
    public var historyToken: HistoryToken?
    public var openSessions: Int
    /// The store's file, for SQLite stores.
    public var path: String?
    /// The store's backend: its URL scheme (`sqlite`, `memory`, …).
    public var backend: String
    /// Where the store lives: its backend's URL.
    public var url: String
    /// How much history the store keeps.
    public var historyRetention: HistoryRetention
    /// The user who owns the store (by name, or `uid N`); nil for a store open to every caller.
    public var owner: String?
    /// What others were granted.
    public var grants: [AccessGrant]
    /// Why the store's server could not be reached for this answer (a PostgreSQL server down):
    /// ``historyToken`` is then nil. Nil when it was reached.
    public var unavailable: String?

    /// Access to a store granted to a user or group of the daemon's host.
    public struct AccessGrant: Hashable, Sendable {
        public enum Principal: Hashable, Sendable {
            case user(String)
            case group(String)
        }
        public var principal: Principal
        /// Whether it may write too (else read only).
        public var mayWrite: Bool
    }

    /// How much history a store keeps: its own limits where it has them, else the daemon's.
    public struct HistoryRetention: Hashable, Sendable {
        /// Transactions older than this are deleted (nil: no age limit).
        public var age: Duration?
        /// At most this many transactions are kept (nil: no count limit).
        public var transactions: Int?
        /// Whether each limit is the store's own setting (else the daemon's).
        public var ageIsTheStores: Bool
        public var transactionsIsTheStores: Bool
    }

    /// A store's own setting of one retention limit (``DaemonClient/setHistoryRetention(of:age:transactions:)``).
    public enum RetentionLimit: Hashable, Sendable {
        /// This limit for the store.
        case limit(Int64)
        /// No limit of this kind for the store, whatever the daemon's.
        case unlimited
        /// The daemon's limit (the store's own setting removed).
        case daemons

        var wire: Int64 {
            switch self {
            case .limit(let value): value
            case .unlimited: 0
            case .daemons: -1
            }
        }
    }

    init(wire: Modeld_V1_StoreInfo) throws(ModelError) {
        guard let uuid = UUID(uuidString: wire.uuid) else {
            throw ModelError(.storageFailure, "the daemon sent a bad store UUID '\(wire.uuid)'")
        }
        name = wire.name
        storeIdentifier = uuid
        kind =
            switch wire.kind {
            case .sqlite: .sqlite
            case .memory: .memory
            default: .other
            }
        schemaVersionHash = wire.schemaVersionHash
        entities = wire.entities
        historyToken = wire.hasHistoryToken ? HistoryToken(wire.historyToken) : nil
        openSessions = Int(wire.openSessions)
        path = wire.path.isEmpty ? nil : wire.path
        backend = wire.backend.isEmpty ? kind.rawValue : wire.backend
        url = wire.url
        owner = wire.owner.isEmpty ? nil : wire.owner
        unavailable = wire.unavailable.isEmpty ? nil : wire.unavailable
        grants = wire.grants.compactMap { grant in
            switch grant.principal.kind {
            case .user(let name): AccessGrant(principal: .user(name), mayWrite: grant.level == .write)
            case .group(let name): AccessGrant(principal: .group(name), mayWrite: grant.level == .write)
            case nil: nil
            }
        }
        let retention = wire.historyRetention
        historyRetention = HistoryRetention(
            age: retention.hasAgeSeconds ? .seconds(retention.ageSeconds) : nil,
            transactions: retention.hasTransactions ? Int(retention.transactions) : nil,
            ageIsTheStores: retention.ageIsTheStores, transactionsIsTheStores: retention.transactionsIsTheStores)
    }
}

/// What `status` reports about the daemon.
public struct DaemonStatus: Hashable, Sendable {
    public var version: String
    public var uptimeSeconds: Int
    /// The stores the caller may read (every store, for an administrator).
    public var stores: Int
    /// Sessions open on those stores.
    public var openSessions: Int
    public var maximumSessions: Int
    public var idleTimeoutSeconds: Int
    public var dataDirectory: String
    public var processIdentifier: Int
    /// Watches open on those stores.
    public var openWatches: Int = 0
    /// About how many bytes the open watches hold, and the most they may (`modeld
    /// --max-watch-memory`).
    public var watchMemoryBytes: Int = 0
    public var maximumWatchMemoryBytes: Int = 0
}

extension DaemonStatus {
    init(wire status: Modeld_V1_StatusResponse) {
        self.init(
            version: status.version, uptimeSeconds: Int(status.uptimeSeconds), stores: Int(status.stores),
            openSessions: Int(status.openSessions), maximumSessions: Int(status.maxSessions),
            idleTimeoutSeconds: Int(status.idleTimeoutSeconds), dataDirectory: status.dataDirectory,
            processIdentifier: Int(status.pid))
        openWatches = Int(status.openWatches)
        watchMemoryBytes = Int(status.watchMemoryBytes)
        maximumWatchMemoryBytes = Int(status.maxWatchMemoryBytes)
    }
}

/// The result of a save: the temporary → permanent identifier remap, the history token, and,
/// when asked for, the transaction the save wrote (what it inserted, updated and deleted,
/// cascades included).
public struct SaveOutcome: Hashable, Sendable {
    /// Each inserted object's temporary identifier and its permanent one. An object inserted
    /// without one (``ObjectEdit/insert(entity:attributes:relationships:id:)`` with `id` nil)
    /// is under a temporary identifier made up for it; those saved as runs are made up here,
    /// when this is first read (see ``insertedRuns``).
    public var remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier] {
        get {
            guard !insertedRuns.isEmpty else { return namedRemaps }
            var remap = namedRemaps
            remap.reserveCapacity(namedRemaps.count + insertedRuns.reduce(0) { $0 + $1.count })
            for run in insertedRuns { run.identifiers { remap[$0] = $1 } }
            return remap
        }
        set {
            namedRemaps = newValue
            insertedRuns = []
        }
    }
    /// The remaps the daemon answered one by one.
    private var namedRemaps: [PersistentIdentifier: PersistentIdentifier]
    /// A save of plain inserts alone (none with an identifier, as a bulk load sends) answers
    /// them as runs: objects of one entity with consecutive keys, in the order of the inserts.
    /// Their permanent identifiers are `firstIdentifier`'s entity with keys `firstKey` on.
    public var insertedRuns: [InsertedRun]
    public var token: HistoryToken?
    public var transaction: HistoryTransaction?
    /// The transaction has more changes than the response carried; read the rest from history.
    public var transactionIsTruncated: Bool
    /// The version each object the save updated has after it (inserted objects are at 1).
    public var versions: [PersistentIdentifier: Int64] = [:]

    init(wire: Modeld_V1_SaveResult, store: UUID?) throws(ModelError) {
        var remap: [PersistentIdentifier: PersistentIdentifier] = [:]
        for (temporary, permanent) in wire.remapped {
            remap[try PersistentIdentifier(wire: temporary, in: store)] = try PersistentIdentifier(
                wire: permanent, in: store)
        }
        namedRemaps = remap
        insertedRuns = try wire.insertedRuns.map { run throws(ModelError) in
            let first = try PersistentIdentifier(wire: run.firstUri, in: store)
            guard let key = first.primaryKey, key >= 0, run.count >= 0, run.count <= Int64.max - key else {
                throw ModelError(
                    .invalidArgument,
                    "a malformed response from modeld: a run of \(run.count) objects from \(run.firstUri)")
            }
            return InsertedRun(
                storeIdentifier: first.storeIdentifier, entityName: first.entityName, firstKey: key,
                count: Int(run.count))
        }
        token = wire.hasToken ? HistoryToken(wire.token) : nil
        transaction = wire.hasTransaction ? try HistoryTransaction(wire: wire.transaction, in: store) : nil
        transactionIsTruncated = wire.transactionTruncated
        for (uri, version) in wire.versions { versions[try PersistentIdentifier(wire: uri, in: store)] = version }
    }

    init(_ fields: SaveResultFields) {
        namedRemaps = fields.remappedIdentifiers
        insertedRuns = fields.insertedRuns
        token = fields.token
        transaction = fields.transaction
        transactionIsTruncated = fields.transactionIsTruncated
        versions = fields.versions
    }
}

/// The result of a batch delete or update.
public struct BatchOutcome: Hashable, Sendable {
    /// Objects that matched the predicate.
    public var matched: Int
    /// Objects deleted, cascades included (batch delete).
    public var deleted: Int
    public var token: HistoryToken?
}

/// A session's unsaved changes, as the daemon reports them.
public struct SessionDescription: Hashable, Sendable {
    public var id: String
    public var store: String
    public var author: String?
    public var hasChanges: Bool
    public var inserted: [PersistentIdentifier]
    public var updated: [PersistentIdentifier]
    public var deleted: [PersistentIdentifier]
}

/// What setting a store's schema did: the store as it is now, and for a store that had a
/// schema, the migration made (or planned, for a dry run) with its refusals.
public struct SchemaApplication: Hashable, Sendable {
    public var store: StoreInfo
    /// The migration's plan: its steps, with the objects each touches, and its refusals (from
    /// version "" for a store that had no schema); nil from a daemon that sent none.
    public var migration: MigrationPlan?
    /// Whether the migration changed the store (false for a dry run, or nothing to do).
    public var migrationApplied: Bool

    public init(store: StoreInfo, migration: MigrationPlan?, migrationApplied: Bool) {
        self.store = store
        self.migration = migration
        self.migrationApplied = migrationApplied
    }
}
