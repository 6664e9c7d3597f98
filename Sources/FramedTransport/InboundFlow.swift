import GRPCCore
import NIOCore
import Synchronization

/// Back-pressure for request messages on one framed connection: a client-streaming call's
/// messages wait in its stream until its handler takes them, and a client that sends faster than
/// the handler takes (a restore onto a slow disk) would otherwise pile them up in memory. While
/// the messages the connection's calls have not taken exceed ``pauseAbove`` bytes, the
/// connection stops reading its socket (the client's writes then wait on theirs); it reads again
/// once they fall below ``resumeBelow``.
package final class InboundFlow: Sendable {
    static let pauseAbove = 4 * 1024 * 1024
    static let resumeBelow = 1024 * 1024

    private let channel: any Channel
    private let statistics: InboundFlowStatistics
    private let state = Mutex<(held: Int, paused: Bool)>((0, false))

    package init(channel: any Channel, statistics: InboundFlowStatistics) {
        self.channel = channel
        self.statistics = statistics
    }

    /// Bytes held now, not yet taken by their calls.
    var held: Int { state.withLock { $0.held } }

    /// A message of `bytes` was handed to a call's stream (on the event loop).
    package func received(_ bytes: Int) {
        let pause = state.withLock { state in
            state.held += bytes
            statistics.held(state.held)
            guard state.held > Self.pauseAbove, !state.paused else { return false }
            state.paused = true
            return true
        }
        if pause {
            statistics.paused()
            applyOnLoop()
        }
    }

    /// `bytes` handed over earlier were taken, or dropped with their call (from any thread).
    package func released(_ bytes: Int) {
        guard bytes > 0 else { return }
        let resume = state.withLock { state in
            state.held -= bytes
            guard state.paused, state.held < Self.resumeBelow else { return false }
            state.paused = false
            return true
        }
        if resume {
            statistics.resumed()
            applyOnLoop()
        }
    }

    /// Sets the channel's reading to what the state says when the loop gets to it (a pause and a
    /// resume queued in turn end as the latest state says).
    private func applyOnLoop() {
        let channel = channel
        channel.eventLoop.execute { [self] in
            let paused = state.withLock { $0.paused }
            channel.setOption(ChannelOptions.autoRead, value: !paused).whenComplete { _ in
                if !paused { channel.read() }
            }
        }
    }
}

/// How often a transport's connections stopped reading for their calls to catch up.
public final class InboundFlowStatistics: Sendable {
    private let counts = Mutex<(now: Int, ever: Int, peak: Int)>((0, 0, 0))
    /// Actions waiting for the next pause (``whenPaused(_:)``).
    private let pauseWatchers = Mutex<[@Sendable () -> Void]>([])

    public init() {}

    /// Connections not reading now.
    public var pausedConnections: Int { counts.withLock { $0.now } }
    /// Times any connection stopped reading.
    public var pauses: Int { counts.withLock { $0.ever } }
    /// The most bytes one connection's calls ever held untaken.
    public var peakHeld: Int { counts.withLock { $0.peak } }

    func held(_ bytes: Int) {
        counts.withLock { $0.peak = max($0.peak, bytes) }
    }

    /// Runs `action` once a connection stops reading: at once if one is stopped now, else at the
    /// next pause (for tests, which wait for a slow reader's connection to stop).
    package func whenPaused(_ action: @escaping @Sendable () -> Void) {
        let now = pauseWatchers.withLock { watchers in
            guard pausedConnections == 0 else { return true }
            watchers.append(action)
            return false
        }
        if now { action() }
    }

    func paused() {
        counts.withLock {
            $0.now += 1
            $0.ever += 1
        }
        for action in pauseWatchers.withLock({ watchers in
            defer { watchers = [] }
            return watchers
        }) {
            action()
        }
    }

    func resumed() {
        counts.withLock { $0.now -= 1 }
    }
}

/// The bytes of one call's messages handed to its stream and not yet taken: what it gives back
/// to the connection's ``InboundFlow`` as its handler takes them, or all at once when the call ends.
package final class UnreadBytes: Sendable {
    private let count = Mutex(0)

    package func add(_ bytes: Int) {
        count.withLock { $0 += bytes }
    }

    /// Takes up to `bytes` (what is left if less) and returns how many were taken.
    func take(_ bytes: Int) -> Int {
        count.withLock { count in
            let taken = min(bytes, count)
            count -= taken
            return taken
        }
    }

    package func takeAll() -> Int {
        count.withLock { count in
            defer { count = 0 }
            return count
        }
    }
}

/// A call's request parts, giving each message's bytes back to the connection's flow as the
/// handler takes it.
package struct FlowControlledRequests: AsyncSequence, Sendable {
    package typealias Element = RPCRequestPart<[UInt8]>
    let base: AsyncThrowingStream<Element, any Error>
    let unread: UnreadBytes
    let flow: InboundFlow

    package init(base: AsyncThrowingStream<Element, any Error>, unread: UnreadBytes, flow: InboundFlow) {
        self.base = base
        self.unread = unread
        self.flow = flow
    }

    package func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), unread: unread, flow: flow)
    }

    package struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Element, any Error>.AsyncIterator
        let unread: UnreadBytes
        let flow: InboundFlow

        package mutating func next() async throws -> Element? {
            let part = try await base.next()
            if case .message(let bytes)? = part { flow.released(unread.take(bytes.count)) }
            return part
        }
    }
}
