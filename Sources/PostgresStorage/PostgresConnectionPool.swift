import NIOCore
import NIOPosix
import Synchronization

/// The connections a store reads through: up to `size` ``PostgresConnectionQueue``s, each
/// opening its connection with its first job, spread over the event loops. A read takes an idle
/// one (the one freed last, so light load stays on few connections), preferring one on the event
/// loop it is called from: the statement is then written, and its answer read, by the thread
/// that serves the caller's own connection, with no other thread woken. With none idle it waits,
/// first come first served, for whichever frees first: a slow read holds its own connection
/// only. Saves keep a connection of their own (the store's writer), so one daemon's saves run
/// one at a time, as on SQLite, and never wait for reads.
final class PostgresConnectionPool: Sendable {
    private struct State {
        var idle: [PostgresConnectionQueue]
        var waiting: [CheckedContinuation<PostgresConnectionQueue, Never>] = []
    }
    private let queues: [PostgresConnectionQueue]
    private let state: Mutex<State>

    init(endpoint: PostgresEndpoint, size: Int) {
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        queues = (0..<max(size, 1)).map {
            PostgresConnectionQueue(endpoint: endpoint, label: "reader\($0)", eventLoop: loops[$0 % loops.count])
        }
        // Reversed, so that the first queue is taken first.
        state = Mutex(State(idle: queues.reversed()))
    }

    /// Runs `body` on a connection of its own.
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) throws -> T) async throws -> T {
        let queue = await acquire()
        defer { release(queue) }
        return try await queue.run(body)
    }

    /// Runs `body` on a connection of its own, from the calling task (reads only: see
    /// ``PostgresConnectionQueue/runAsync(_:)``).
    func runAsync<T: Sendable>(_ body: (PostgresAsyncSession) async throws -> T) async throws -> T {
        let queue = await acquire()
        defer { release(queue) }
        return try await queue.runAsync(body)
    }

    /// An idle connection's queue (taken at once, without suspending, when there is one), or
    /// the first one freed.
    private func acquire() async -> PostgresConnectionQueue {
        let here = MultiThreadedEventLoopGroup.currentEventLoop
        if let idle = state.withLock({ Self.takeIdle(&$0, preferring: here) }) { return idle }
        return await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> PostgresConnectionQueue? in
                if let queue = Self.takeIdle(&state, preferring: here) { return queue }
                state.waiting.append(continuation)
                return nil
            }
            if let idle { continuation.resume(returning: idle) }
        }
    }

    /// An idle queue, one on `loop` if there is one.
    private static func takeIdle(_ state: inout State, preferring loop: (any EventLoop)?) -> PostgresConnectionQueue? {
        if let loop, let index = state.idle.lastIndex(where: { $0.eventLoop === loop }) {
            return state.idle.remove(at: index)
        }
        return state.idle.popLast()
    }

    private func release(_ queue: PostgresConnectionQueue) {
        let waiter = state.withLock { state -> CheckedContinuation<PostgresConnectionQueue, Never>? in
            if !state.waiting.isEmpty { return state.waiting.removeFirst() }
            state.idle.append(queue)
            return nil
        }
        waiter?.resume(returning: queue)
    }

    /// Closes every connection once its queued jobs have run.
    func close() async {
        for queue in queues { await queue.close() }
    }
}
