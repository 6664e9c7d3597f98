#if canImport(Glibc)
    import Glibc
#endif

/// How the daemon shares out its file descriptors (`RLIMIT_NOFILE`), so that it never runs out
/// of them for what it has already promised: a few for itself, three for each streaming-fetch
/// slot (a reader connection of its own: the database and its WAL, and one spare), ten for each
/// store (the writer and three readers, two each, the shared-memory index, and one spare), and one
/// for each client connection. Connections get at most half of what remains after the daemon's
/// own share and the streaming slots, and never more than `--max-connections`; stores the rest.
struct DescriptorBudget: Sendable {
    /// Descriptors the daemon keeps for itself: standard streams, its event loops' epoll and
    /// event descriptors, its lock files, listening sockets, logs, and files opened for a moment.
    static let reserved = 64
    static let perStore = 10
    static let perStreamingFetch = 3

    /// The soft limit in force.
    let limit: Int
    /// The most client connections served at once.
    let maximumConnections: Int
    /// The most stores the daemon can keep open.
    let maximumStores: Int

    init(limit: Int, configuredConnections: Int, streamingFetches: Int) {
        self.limit = limit
        let shared = max(limit - Self.reserved - streamingFetches * Self.perStreamingFetch, 0)
        maximumConnections = max(min(configuredConnections, shared / 2), 1)
        maximumStores = max((shared - maximumConnections) / Self.perStore, 1)
    }

    /// The process's soft limit on open files.
    static func currentLimit() -> Int {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return 1_024 }
        // RLIM_INFINITY is the largest value, so it reads as Int32.max too.
        return limits.rlim_cur > rlim_t(Int32.max) ? Int(Int32.max) : Int(limits.rlim_cur)
    }
}
