import ModelCore
import ModelStorage
import NIOPosix
import Synchronization

/// Connections for fetches streamed as they are read (``PostgresStore/fetchObjects(_:batchSize:_:)``).
/// Such a fetch keeps its transaction (its snapshot) and its cursor open until its consumer has
/// taken every batch, which a slow consumer makes long; on a connection of its own it holds up
/// no read, where on one of the reader pool's it would keep that connection from every read
/// waiting for one. Connections open when a stream needs one, up to `limit` (the store's
/// `pool_size`, so that a store's streams take a known share of the server's connections); a
/// stream finding all of them busy waits for the first freed, first come first served (a
/// consumer that stops reading is ended by the daemon's stall timeout), or until its task is
/// cancelled (its client went). A few are kept for the next streams, the others closed once done.
///
/// Closing closes the connections, the streams' too: a stream still running then fails with
/// `closed`, and nothing of it is left on the server (its transaction ends with its connection).
final class PostgresStreams: Sendable {
    /// Idle connections kept for the next streams.
    static let kept = 2

    private struct State {
        var idle: [PostgresConnectionQueue] = []
        /// Streams started so far; each stream's number.
        var started = 0
        /// The streams running, by number.
        var running: [Int: PostgresConnectionQueue] = [:]
        /// Streams waiting for a connection, in order; resumed with nil when the store closes.
        var waiting: [(number: Int, continuation: CheckedContinuation<PostgresConnectionQueue?, Never>)] = []
        var closed = false
        /// Actions waiting for the next stream to wait (``whenAStreamWaits(_:)``).
        var waitWatchers: [@Sendable () -> Void] = []

        /// A connection for stream `number` without waiting: an idle one, or a new one while
        /// fewer than `limit` are open.
        mutating func take(_ number: Int, limit: Int, make: () -> PostgresConnectionQueue) -> PostgresConnectionQueue? {
            guard let queue = idle.popLast() ?? (running.count < limit ? make() : nil) else { return nil }
            running[number] = queue
            return queue
        }
    }

    private let endpoint: PostgresEndpoint
    private let limit: Int
    private let state = Mutex(State())

    init(endpoint: PostgresEndpoint, limit: Int) {
        self.endpoint = endpoint
        self.limit = max(limit, 1)
    }

    /// How many streams run now, wait for a connection, and how many connections are kept idle.
    var counts: (running: Int, waiting: Int, idle: Int) {
        state.withLock { ($0.running.count, $0.waiting.count, $0.idle.count) }
    }

    /// Runs `action` once the next stream starts waiting for a connection: for tests, which
    /// start one behind streams holding every connection and wait for it to queue.
    func whenAStreamWaits(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.waitWatchers.append(action) }
    }

    /// Runs `body` from the calling task with a connection of its own. `mayRetry` says, once a
    /// connection kept from an earlier stream turns out to be cut, whether `body` may run again
    /// on a new one: only while it has handed nothing on.
    func run<T: Sendable>(
        mayRetry: () -> Bool, _ body: (PostgresAsyncSession) async throws -> T
    ) async throws -> T {
        let (queue, number) = try await acquire()
        let result: Result<T, any Error>
        do {
            // Never again once the store closes: a new connection would outlive it.
            result = .success(
                try await queue.runAsync(mayRetry: { !state.withLock { $0.closed } && mayRetry() }, body))
        } catch {
            result = .failure(error)
        }
        let closed = await giveBack(queue, number)
        switch result {
        case .success(let value): return value
        case .failure(let error): throw closed ? Self.endedByClosing : error
        }
    }

    /// A connection of the stream's own, and the stream's number: at once when one is idle or
    /// another may open, otherwise the first one freed.
    private func acquire() async throws -> (PostgresConnectionQueue, Int) {
        let make = { [endpoint] (number: Int) in
            PostgresConnectionQueue(
                endpoint: endpoint, label: "stream\(number)",
                eventLoop: MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.next())
        }
        let limit = limit
        let (now, number) = try state.withLock { state throws(ModelError) -> (PostgresConnectionQueue?, Int) in
            guard !state.closed else { throw Self.closedError }
            state.started += 1
            let number = state.started
            return (state.take(number, limit: limit) { make(number) }, number)
        }
        if let now { return (now, number) }
        let handed = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PostgresConnectionQueue?, Never>) in
                // Looked at again: a stream may have ended since (or the task been cancelled).
                let (queue, ready, watchers) = state.withLock {
                    state -> (PostgresConnectionQueue?, Bool, [@Sendable () -> Void]) in
                    guard !state.closed, !Task.isCancelled else { return (nil, true, []) }
                    if let queue = state.take(number, limit: limit, make: { make(number) }) {
                        return (queue, true, [])
                    }
                    state.waiting.append((number, continuation))
                    defer { state.waitWatchers = [] }
                    return (nil, false, state.waitWatchers)
                }
                for watcher in watchers { watcher() }
                if ready { continuation.resume(returning: queue) }
            }
        } onCancel: {
            // A caller that gave up (its client went) stops waiting at once.
            let waiter = state.withLock { state in
                state.waiting.firstIndex { $0.number == number }.map { state.waiting.remove(at: $0).continuation }
            }
            waiter?.resume(returning: nil)
        }
        guard let handed else {
            if Task.isCancelled, !state.withLock({ $0.closed }) { throw ModelError.interrupted }
            throw Self.closedError
        }
        return (handed, number)
    }

    private static let closedError = ModelError(.closed, "the store is closed; open it again to use it")
    private static let endedByClosing = ModelError(
        .closed,
        "the store closed while this fetch streamed from it (it was dropped, or the daemon is stopping); fetch again once it is open"
    )

    /// Hands `queue` to the first stream waiting, keeps it for the next, or closes it. Returns
    /// whether the store is closed.
    private func giveBack(_ queue: PostgresConnectionQueue, _ number: Int) async -> Bool {
        enum Next {
            case handed(CheckedContinuation<PostgresConnectionQueue?, Never>), kept, closed(storeClosed: Bool)
        }
        let next = state.withLock { state -> Next in
            state.running[number] = nil
            if state.closed { return .closed(storeClosed: true) }
            if !state.waiting.isEmpty {
                let waiter = state.waiting.removeFirst()
                state.running[waiter.number] = queue
                return .handed(waiter.continuation)
            }
            guard state.idle.count < Self.kept else { return .closed(storeClosed: false) }
            state.idle.append(queue)
            return .kept
        }
        switch next {
        case .handed(let continuation):
            continuation.resume(returning: queue)
            return false
        case .kept:
            return false
        case .closed(let storeClosed):
            await queue.close()
            return storeClosed
        }
    }

    /// Closes the idle connections and those of the streams running, which then fail; streams
    /// waiting for a connection fail with `closed`.
    func close() async {
        let (queues, waiting) = state.withLock { state in
            state.closed = true
            defer {
                state.idle = []
                state.waiting = []
            }
            return (state.idle + state.running.values, state.waiting)
        }
        for waiter in waiting { waiter.continuation.resume(returning: nil) }
        for queue in queues { await queue.close() }
    }
}
