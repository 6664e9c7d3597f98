import NIOCore
import Synchronization

/// How many connections a server holds open across its transports, against a limit: a
/// connection past it is closed as soon as it is accepted, so that the daemon never runs out of
/// file descriptors for the stores it already serves.
public final class ConnectionLimit: Sendable {
    /// The most connections open at once.
    public let maximum: Int
    private let open = Atomic(0)
    private let refused = Atomic(0)

    /// Called with the number refused so far, for each connection refused (the daemon logs it).
    private let onRefusal: @Sendable (_ total: Int) -> Void

    public init(maximum: Int, onRefusal: @escaping @Sendable (_ total: Int) -> Void = { _ in }) {
        self.maximum = maximum
        self.onRefusal = onRefusal
    }

    /// Connections open now.
    public var count: Int { open.load(ordering: .relaxed) }

    /// Connections refused so far.
    public var refusals: Int { refused.load(ordering: .relaxed) }

    /// Counts a new connection in; false (and not counted) when the limit is reached. Whoever
    /// admits a connection calls ``closed()`` when it closes.
    public func admit() -> Bool {
        var current = open.load(ordering: .relaxed)
        while true {
            guard current < maximum else {
                onRefusal(refused.add(1, ordering: .relaxed).newValue)
                return false
            }
            let (exchanged, original) = open.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    public func closed() {
        open.subtract(1, ordering: .relaxed)
    }
}

extension ConnectionLimit {
    /// Admits a newly accepted `channel`, counted until it closes; or closes it at once when the
    /// limit is reached. Returns whether it was admitted.
    public func admit(_ channel: any Channel) -> Bool {
        guard admit() else {
            channel.close(promise: nil)
            return false
        }
        channel.closeFuture.whenComplete { _ in self.closed() }
        return true
    }
}
