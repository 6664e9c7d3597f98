/// Where modeld listens and keeps its data when nobody says otherwise. `modeld` and `modelctl`
/// both use these, so that both find each other with no flags at all.
public enum DefaultLocations {
    /// The daemon's socket: `/run/modeld/modeld.sock` for root; otherwise
    /// `$XDG_RUNTIME_DIR/modeld/modeld.sock`, or `/tmp/modeld-<uid>/modeld.sock` without one.
    public static func socketPath(environment: [String: String], userID: UInt32) -> String {
        if userID == 0 { return "/run/modeld/modeld.sock" }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/modeld/modeld.sock"
        }
        return "/tmp/modeld-\(userID)/modeld.sock"
    }

    /// The socket a client tries when none is named: the user's own daemon's, if it is there,
    /// otherwise the system daemon's (`/run/modeld/modeld.sock`, as systemd runs it) if that is
    /// there, otherwise the user's (so that the error names where a daemon was expected).
    public static func clientSocketPath(environment: [String: String], userID: UInt32, exists: (String) -> Bool)
        -> String
    {
        let own = socketPath(environment: environment, userID: userID)
        let system = socketPath(environment: environment, userID: 0)
        return !exists(own) && exists(system) ? system : own
    }

    /// The socket beside the daemon's socket where it serves the same calls in its own framing
    /// instead of HTTP/2, for clients that speak it (the Swift client, `modelctl`): the socket's
    /// path with `.frames` after it; nil when that is longer than a Unix socket path may be
    /// (107 bytes), in which case only the gRPC socket is served.
    public static func framedSocketPath(for socketPath: String) -> String? {
        let path = socketPath + ".frames"
        return path.utf8.count <= 107 ? path : nil
    }

    /// The data directory: `/var/lib/modeld` for root; otherwise `$XDG_DATA_HOME/modeld`, or
    /// `$HOME/.local/share/modeld`.
    public static func dataDirectory(environment: [String: String], userID: UInt32) -> String {
        if userID == 0 { return "/var/lib/modeld" }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/modeld" }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp/modeld-\(userID)-home"
        return home + "/.local/share/modeld"
    }
}
