import Logging
import Synchronization

/// Logs connections refused at the connection limit without flooding the log: the first at once,
/// then at most one line every ``interval``, with how many were refused since the last.
final class RefusalLog: Sendable {
    static let interval = Duration.seconds(10)

    private let logger: Logger
    private let descriptors: DescriptorBudget
    private let last = Mutex<(at: ContinuousClock.Instant?, total: Int)>((nil, 0))

    init(logger: Logger, descriptors: DescriptorBudget) {
        self.logger = logger
        self.descriptors = descriptors
    }

    /// A connection was refused; `total` have been since the daemon started.
    func refused(total: Int) {
        let now = ContinuousClock.now
        let since = last.withLock { last -> Int? in
            if let at = last.at, now - at < Self.interval { return nil }
            defer { last = (now, total) }
            return total - last.total
        }
        guard let since else { return }
        logger.warning(
            """
            refusing connections: \(descriptors.maximumConnections) are open, the most this daemon serves \
            (--max-connections, or half of what its file-descriptor limit of \(descriptors.limit) leaves beside its stores); \
            \(since) refused since the last such line
            """)
    }
}
