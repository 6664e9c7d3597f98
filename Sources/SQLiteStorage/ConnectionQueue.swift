import CSQLite
import Dispatch
import ModelCore

/// A connection and the serial queue it is used on. SQLite calls block, so they run here rather
/// than on Swift's cooperative thread pool; callers await them through a continuation.
final class ConnectionQueue: @unchecked Sendable {  // `connection` is touched only on `queue`, which is serial.
    private let queue: DispatchQueue
    private let connection: SQLiteConnection

    /// Opens a connection to `path` on a queue of its own.
    static func open(path: String, role: SQLiteConnection.Role, label: String) async throws -> ConnectionQueue {
        let queue = DispatchQueue(label: "modeld.sqlite.\(label)")
        let connection = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SQLiteConnectionBox, any Error>) in
            queue.async {
                continuation.resume(with: Result { SQLiteConnectionBox(try SQLiteConnection(path: path, role: role)) })
            }
        }
        return ConnectionQueue(queue: queue, connection: connection.connection)
    }

    private init(queue: DispatchQueue, connection: SQLiteConnection) {
        self.queue = queue
        self.connection = connection
    }

    /// Runs `body` with the connection on its queue and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(self.connection) })
            }
        }
    }

    /// Closes the connection once the work queued before has finished.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.connection.close()
                continuation.resume()
            }
        }
    }
}

/// Carries a freshly opened connection from its queue to the ``ConnectionQueue`` that owns it.
private struct SQLiteConnectionBox: @unchecked Sendable {  // handed over once, then used on one queue only.
    let connection: SQLiteConnection
    init(_ connection: SQLiteConnection) { self.connection = connection }
}
