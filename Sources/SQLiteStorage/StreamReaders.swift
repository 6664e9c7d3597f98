import ModelCore
import Synchronization

/// Connections for fetches streamed as they are read. Such a fetch keeps its read transaction
/// (its snapshot of the store) open until its consumer has taken every batch, which a slow
/// consumer makes long; on a connection of its own it holds up no other read, where on one of
/// the ``ReaderPool``'s it would hold up every read queued behind it. Connections open when a
/// stream needs one; a few are kept for the next streams, the others closed once done. How many
/// streams run at once is the caller's to bound (the daemon's `--max-streaming-fetches`).
final class StreamReaders: Sendable {
    /// Idle connections kept for the next streams.
    static let kept = 2

    private let path: String
    private let state = Mutex<(idle: [ConnectionQueue], closed: Bool, opened: Int)>(([], false, 0))

    init(path: String) {
        self.path = path
    }

    /// Runs `body` with a connection of its own.
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let connection = try state.withLock { state throws(ModelError) -> ConnectionQueue in
            guard !state.closed else { throw ModelError(.closed, "the store is closed; open it again to use it") }
            if let idle = state.idle.popLast() { return idle }
            state.opened += 1
            return ConnectionQueue(path: path, role: .reader, label: "stream\(state.opened)")
        }
        do {
            let result = try await connection.run(body)
            await giveBack(connection)
            return result
        } catch {
            await giveBack(connection)
            throw error
        }
    }

    private func giveBack(_ connection: ConnectionQueue) async {
        let keep = state.withLock { state -> Bool in
            guard !state.closed, state.idle.count < Self.kept else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { await connection.close() }
    }

    /// Closes the idle connections; those in use close when their stream ends.
    func close(checkpoint: Bool) async {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { await connection.close(checkpoint: checkpoint) }
    }
}
