import Foundation
import Prometheus
import ModelStorage

/// How a daemon runs: where it listens and keeps its data, and its limits. The `modeld`
/// executable fills it from flags and `MODELD_*` variables; tests fill it directly.
public struct ServerConfiguration: Sendable {
    /// The Unix socket to listen on (at most 96 bytes, so that the framed socket beside it fits).
    public var socketPath: String
    /// The socket file's permissions (0660 by default: the owner and its group).
    public var socketMode: UInt16 = 0o660
    /// Where stores live (`stores/<name>.sqlite`), created with mode 0700.
    public var dataDirectory: String
    /// A session with no call for this long is closed, discarding what it did not save.
    public var idleTimeout: Duration = .seconds(600)
    /// A staged migration's session with no call for this long is closed, rolling the migration
    /// back: its store is refused to everyone else while it lasts.
    public var migrationIdleTimeout: Duration = .seconds(60)
    /// The most sessions open at once.
    public var maximumSessions: Int = 1_000
    /// The largest message the daemon accepts or sends.
    public var maximumMessageSize: Int = 16 * 1024 * 1024
    /// The largest an SQLite store file may grow, in bytes (nil: as large as the disk allows).
    /// Saves beyond fail with RESOURCE_EXHAUSTED, as on a full disk; reads go on.
    public var maximumStoreSize: Int64?
    /// The most client connections served at once; fewer when the file-descriptor limit is lower
    /// (``fileDescriptorLimit``; docs/daemon.md says how it is shared out).
    public var maximumConnections: Int = 4_096
    /// A connection with no call under way is closed after this long.
    public var connectionIdleTimeout: Duration = .seconds(300)
    /// How long a request may take to arrive whole once its first bytes came; then its call
    /// fails (and, on the framed socket, its connection closes).
    public var requestTimeout: Duration = .seconds(30)
    /// The most bytes held for requests still arriving, across connections and both sockets;
    /// a request past it is refused with RESOURCE_EXHAUSTED.
    public var maximumPendingRequestBytes: Int = 256 * 1024 * 1024
    /// The most fetches streamed from stores at once, each holding a reader of its own.
    public var maximumStreamingFetches: Int = 32
    /// The most bytes the daemon's watches hold between them (their last results, and a little
    /// for each watch); a watch past it ends with RESOURCE_EXHAUSTED (``WatchMemory``).
    public var maximumWatchMemory: Int = 256 * 1024 * 1024
    /// A streamed response that waits this long for its client to read ends the stream with
    /// RESOURCE_EXHAUSTED, freeing what it held.
    public var streamStallTimeout: Duration = .seconds(20)
    /// How long history transactions are kept: older ones are deleted in the background (nil,
    /// the default: kept until a client deletes them).
    public var historyRetentionAge: Duration?
    /// The most history transactions a store keeps: older ones are deleted in the background
    /// (nil, the default: no limit).
    public var historyRetentionCount: Int?
    /// How often the history retention is applied to every store.
    public var historyPruneInterval: Duration = .seconds(60)
    /// At shutdown, how long calls under way may take to finish before their connections are
    /// closed (streams are ended at once).
    public var shutdownGracePeriod: Duration = .seconds(5)
    /// The file-descriptor limit the daemon plans its connections and stores by; nil for the
    /// process's soft `RLIMIT_NOFILE`.
    public var fileDescriptorLimit: Int?
    /// The backend (URL scheme) of a store a client creates without naming one, and of the default
    /// store.
    public var defaultBackend = "sqlite"
    /// A store to create at start-up if it does not exist (nil for none).
    public var defaultStore: String? = "default"
    /// A socket already bound and listening (systemd socket activation), used instead of binding
    /// `socketPath`.
    public var listeningSocketDescriptor: Int32?
    /// The framed socket (`<socketPath>.frames`), when systemd bound and passed it too; without
    /// it, a socket-activated daemon serves gRPC only.
    public var framedSocketDescriptor: Int32?
    /// Reported by the Status call.
    public var version: String = ModelDaemon.version
    /// Where the daemon records its metrics; a registry of its own when nil. The executable
    /// passes the one it bootstrapped swift-metrics with, so that the storage layer's metrics
    /// land beside the daemon's.
    public var metricsRegistry: PrometheusCollectorRegistry?
    /// A loopback address (`127.0.0.1:9464`, `[::1]:9464`) to serve the metrics on over HTTP
    /// (`GET /metrics`), for Prometheus to scrape; off when nil.
    public var metricsAddress: String?
    /// The group whose members administer every store, as root and the daemon's own user do
    /// (`--admin-group`); nil for none.
    public var administratorsGroup: UInt32?
    /// The backends the daemon can open stores with, by URL scheme. The executable chooses them
    /// (StandardBackends' `.daemon`: SQLite, memory and PostgreSQL); the daemon knows none by itself.
    public var registry: StorageRegistry

    public init(socketPath: String, dataDirectory: String, registry: StorageRegistry) {
        self.socketPath = socketPath
        self.dataDirectory = dataDirectory
        self.registry = registry
    }
}
