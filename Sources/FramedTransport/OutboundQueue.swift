import GRPCCore
import NIOCore
import Synchronization

/// The bytes a connection's call writers have handed to its channel that the socket has not
/// taken yet, and the writers waiting for them to drain. A stream whose client reads slowly (or
/// not at all) waits here once more than ``limit`` bytes are queued, rather than queueing the
/// rest of its response: the channel's own writability changes only when its event loop runs the
/// writes, so writers on other threads would outpace it. A wait ends when the queue has drained
/// to half the limit, when the waiting task is cancelled (it throws `CancellationError`), or when
/// the connection closes (it throws UNAVAILABLE).
package final class OutboundQueue: Sendable {
    /// Bytes queued beyond which a writer waits.
    static let limit = 256 * 1024

    private struct State {
        var queued = 0
        var closed = false
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    static let closedError = RPCError(code: .unavailable, message: "the client's connection closed")

    /// Hands `outbound` to `channel`, counted until it is written; throws UNAVAILABLE once the
    /// connection has closed. Returns whether more than ``limit`` bytes are now queued.
    @discardableResult
    func enqueue(_ outbound: ServerOutbound, on channel: any Channel) throws -> Bool {
        try enqueue(outbound, size: outbound.bytes.readableBytes, on: channel)
    }

    /// Hands `outbound` (what `channel`'s pipeline writes) to `channel`, counted as `size` bytes
    /// until it is written, as ``enqueue(_:on:)`` does.
    @discardableResult
    package func enqueue(_ outbound: some Sendable, size: Int, on channel: any Channel) throws -> Bool {
        let over = try state.withLock { state throws(RPCError) -> Bool in
            guard !state.closed else { throw Self.closedError }
            state.queued += size
            return state.queued > Self.limit
        }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { result in self.written(size, failed: (try? result.get()) == nil) }
        channel.writeAndFlush(outbound, promise: promise)
        return over
    }

    /// ``enqueue(_:on:)``, then ``waitForRoom()`` if the queue is over its limit.
    func write(_ outbound: ServerOutbound, on channel: any Channel) async throws {
        if try enqueue(outbound, on: channel) { try await waitForRoom() }
    }

    /// Returns once at most ``limit`` bytes are queued (at once if they already are).
    package func waitForRoom() async throws {
        let id = try state.withLock { state throws(RPCError) -> Int? in
            guard !state.closed else { throw Self.closedError }
            guard state.queued > Self.limit else { return nil }
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let now = state.withLock { state -> Result<Void, any Error>? in
                    if state.closed { return .failure(Self.closedError) }
                    if state.queued <= Self.limit { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = waiter
                    return nil
                }
                if let now { waiter.resume(with: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    /// A write of `size` bytes finished: the socket took it, or the connection closed.
    private func written(_ size: Int, failed: Bool) {
        let (woken, outcome) = state.withLock {
            state -> ([CheckedContinuation<Void, any Error>], Result<Void, any Error>) in
            state.queued -= size
            if failed { state.closed = true }
            guard state.closed || state.queued <= Self.limit / 2, !state.waiters.isEmpty else {
                return ([], .success(()))
            }
            defer { state.waiters = [:] }
            return (Array(state.waiters.values), state.closed ? .failure(Self.closedError) : .success(()))
        }
        for waiter in woken { waiter.resume(with: outcome) }
    }
}
