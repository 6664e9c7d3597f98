#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// Why the directory of the per-user socket in /tmp (``socketPath(environment:userID:)``
    /// without `XDG_RUNTIME_DIR`) cannot be trusted, or nil when it can (or is not there yet, or
    /// `socketPath` is another): any user may make `/tmp/modeld-<uid>` first and serve a socket of
    /// their own in it, so it must be `userID`'s and written by no one else.
    public static func untrustedFallbackDirectory(of socketPath: String, userID: UInt32) -> String? {
        let directory = "/tmp/modeld-\(userID)"
        guard socketPath.hasPrefix(directory + "/") else { return nil }
        var info = stat()
        guard lstat(directory, &info) == 0 else { return nil }
        if info.st_mode & S_IFMT != S_IFDIR { return "\(directory) is not a directory" }
        if info.st_uid != userID { return "\(directory) belongs to uid \(info.st_uid), not to uid \(userID)" }
        if info.st_mode & 0o022 != 0 {
            return "\(directory) may be written by other users (mode \(String(info.st_mode & 0o777, radix: 8)))"
        }
        return nil
    }
}
