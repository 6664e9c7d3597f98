import ModelCore
import Synchronization

/// Connections for fetches streamed as they are read. Such a fetch keeps its read transaction
/// (its snapshot of the store) open until its consumer has taken every batch, which a slow
/// consumer makes long; on a connection of its own it holds up no other read, where on one of
/// the ``ReaderPool``'s it would hold up every read queued behind it. Connections open when a
/// stream needs one; a few are kept for the next streams, the others closed once done. How many
/// streams run at once is the caller's to bound (the daemon's `--max-streaming-fetches`).
///
/// Closing ends the streams still running (each is stopped, and its statement interrupted) and
/// returns once their connections are closed too: the store's files may be deleted or recycled
/// next, and no connection of this process may outlive them (see ``StoreFileRecycler``).
final class StreamReaders: Sendable {
    /// Idle connections kept for the next streams.
    static let kept = 2

    private struct State {
        var idle: [ConnectionQueue] = []
        /// Streams started so far; each stream's number.
        var started = 0
        /// The streams running: their connections, and how to stop each.
        var running: [Int: (connection: ConnectionQueue, stop: @Sendable () -> Void)] = [:]
        /// Set by ``close(checkpoint:)``, with whether closing copies the WAL into the file.
        var closing: (checkpoint: Bool, waiters: [CheckedContinuation<Void, Never>])?
    }

    private let path: String
    private let state = Mutex(State())

    init(path: String) {
        self.path = path
    }

    /// Runs `body` with a connection of its own; `stop` makes `body` return early (called, from
    /// another thread, when the store closes while `body` runs). A stream ended by the store's
    /// closing throws `closed`.
    func run<T: Sendable>(
        stopping stop: @escaping @Sendable () -> Void = {},
        _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws -> T {
        let (connection, number) = try state.withLock { state throws(ModelError) -> (ConnectionQueue, Int) in
            guard state.closing == nil else { throw Self.closedError }
            state.started += 1
            let connection =
                state.idle.popLast() ?? ConnectionQueue(path: path, role: .reader, label: "stream\(state.started)")
            state.running[state.started] = (connection, stop)
            return (connection, state.started)
        }
        let result: Result<T, any Error>
        do {
            result = .success(try await connection.run(body))
        } catch {
            result = .failure(error)
        }
        let closed = await giveBack(connection, number)
        switch result {
        case .success(let value): return value
        case .failure(let error): throw closed ? Self.endedByClosing : error
        }
    }

    private static let closedError = ModelError(.closed, "the store is closed; open it again to use it")
    private static let endedByClosing = ModelError(
        .closed,
        "the store closed while this fetch streamed from it (it was dropped, or the daemon is stopping); fetch again once it is open"
    )

    /// Keeps `connection` for the next stream, or closes it; then, if the store is closing and
    /// this was the last stream, lets the close return. Returns whether the store is closing.
    private func giveBack(_ connection: ConnectionQueue, _ number: Int) async -> Bool {
        // nil: kept; otherwise closed, copying the WAL into the file or not.
        let closeWithCheckpoint = state.withLock { state -> Bool? in
            if let closing = state.closing { return closing.checkpoint }
            guard state.idle.count < Self.kept else { return true }
            state.idle.append(connection)
            return nil
        }
        if let checkpoint = closeWithCheckpoint { await connection.close(checkpoint: checkpoint) }
        // nil: the store is not closing; otherwise whom to wake (the closer, after the last).
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
            state.running[number] = nil
            guard let closing = state.closing else { return nil }
            guard state.running.isEmpty else { return [] }
            state.closing?.waiters = []
            return closing.waiters
        }
        for waiter in waiters ?? [] { waiter.resume() }
        return waiters != nil
    }

    /// Closes the idle connections, stops the streams running and returns once their
    /// connections are closed too.
    func close(checkpoint: Bool) async {
        let (idle, running) = state.withLock { state in
            if state.closing == nil { state.closing = (checkpoint, []) }
            defer { state.idle = [] }
            return (state.idle, Array(state.running.values))
        }
        for connection in idle { await connection.close(checkpoint: checkpoint) }
        for stream in running {
            stream.stop()
            stream.connection.interrupt()
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard !state.running.isEmpty else { return true }
                state.closing?.waiters.append(done)
                return false
            }
            if now { done.resume() }
        }
    }
}
