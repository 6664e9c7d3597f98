import Foundation

/// How a daemon runs: where it listens and keeps its data, and its limits. The `modeld`
/// executable fills it from flags and `MODELD_*` variables; tests fill it directly.
public struct ServerConfiguration: Sendable {
    /// The Unix socket to listen on (at most 107 bytes).
    public var socketPath: String
    /// The socket file's permissions (0660 by default: the owner and its group).
    public var socketMode: UInt16 = 0o660
    /// Where stores live (`stores/<name>.sqlite`), created with mode 0700.
    public var dataDirectory: String
    /// A session with no call for this long is closed, discarding what it did not save.
    public var idleTimeout: Duration = .seconds(600)
    /// The most sessions open at once.
    public var maximumSessions: Int = 1_000
    /// The largest message the daemon accepts or sends.
    public var maximumMessageSize: Int = 16 * 1024 * 1024
    /// The largest an SQLite store file may grow, in bytes (nil: as large as the disk allows).
    /// Saves beyond fail with RESOURCE_EXHAUSTED, as on a full disk; reads go on.
    public var maximumStoreSize: Int64?
    /// A store to create at start-up if it does not exist (nil for none).
    public var defaultStore: String? = "default"
    /// A socket already bound and listening (systemd socket activation), used instead of binding
    /// `socketPath`.
    public var listeningSocketDescriptor: Int32?
    /// Reported by the Status call.
    public var version: String = ModelDaemon.version

    public init(socketPath: String, dataDirectory: String) {
        self.socketPath = socketPath
        self.dataDirectory = dataDirectory
    }
}
