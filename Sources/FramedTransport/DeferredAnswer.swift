import NIOCore
import Synchronization

/// The answer to a direct call a ``DirectMethods/DeferredHandler`` took: given once, from any
/// thread, and made on the call's event loop, where it is written. The call counts as under way
/// (a graceful shutdown waits for it) until it is answered; the handler must answer it, also
/// when it is cancelled.
public final class DeferredAnswer: Sendable {
    private let record: ServerStreamRecord
    private let eventLoop: any EventLoop
    /// Writes the answer and counts the call out; on the event loop.
    private let deliver: @Sendable (Result<[UInt8], any Error>) -> Void
    private let given = Atomic(false)

    init(
        record: ServerStreamRecord, eventLoop: any EventLoop,
        deliver: @escaping @Sendable (Result<[UInt8], any Error>) -> Void
    ) {
        self.record = record
        self.eventLoop = eventLoop
        self.deliver = deliver
    }

    /// Answers the call with the response `make` returns, or the error it throws (as a unary
    /// handler's), running it on the call's event loop. Only the first answer counts.
    public func answer(_ make: @escaping @Sendable () throws -> [UInt8]) {
        guard given.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return
        }
        eventLoop.execute { self.deliver(Result(catching: make)) }
    }

    /// Runs `action` once if the call is cancelled (its client cancels it or leaves, or the
    /// daemon stops), at once if it already was: the handler's work is to give up, and answer.
    public func onCancel(_ action: @escaping @Sendable () -> Void) {
        record.onCancel(action)
    }
}
