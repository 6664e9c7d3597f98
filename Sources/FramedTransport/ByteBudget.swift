import Synchronization

/// Bytes held against a cap, by any number of holders at once: each reserves what it needs and
/// gives it back when done, and one that does not fit is told so rather than waiting. The
/// daemon keeps two: the requests still arriving (``RequestBudget``) and what its watches hold.
public final class ByteBudget: Sendable {
    /// The most bytes held at once.
    public let capacity: Int
    private let reserved = Atomic(0)

    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// Bytes reserved now.
    public var held: Int { reserved.load(ordering: .relaxed) }

    /// Reserves `bytes`; false (and nothing reserved) if they do not fit.
    public func reserve(_ bytes: Int) -> Bool {
        var current = reserved.load(ordering: .relaxed)
        while true {
            guard current + bytes <= capacity else { return false }
            let (exchanged, original) = reserved.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back bytes reserved earlier.
    public func release(_ bytes: Int) {
        reserved.subtract(bytes, ordering: .relaxed)
    }
}

/// The bytes a server holds for requests still arriving, across all its connections and both
/// transports, against a cap: a request whose bytes do not all come in one read reserves its
/// announced size until it is complete, and one that does not fit is refused with
/// RESOURCE_EXHAUSTED instead of buffered. So clients that announce big requests and send them
/// slowly, or never finish them, cannot take more than the cap between them.
public typealias RequestBudget = ByteBudget

extension ByteBudget {
    /// The message of a request refused because the budget is spent: one bigger than the
    /// whole cap can never be taken, and is told so; another may be once others have arrived.
    public func refusal(for bytes: Int) -> String {
        let cap = "modeld --max-pending-request-bytes \(capacity) bytes"
        guard bytes <= capacity else {
            return "this request announces \(bytes) bytes, more than modeld holds for requests still arriving "
                + "(\(cap)): send it in smaller parts"
        }
        return
            "modeld is holding \(held) bytes of requests still arriving, and this one's \(bytes) bytes would take it "
            + "over its cap (\(cap)): send it again shortly, or in smaller parts"
    }
}
