import CSQLite
import Dispatch
import ModelCore
import Synchronization

/// A connection and the serial queue it is used on. SQLite calls block, so they run here rather
/// than on Swift's cooperative thread pool; callers await them through a continuation. Cancelling
/// the awaiting task interrupts the statement under way (`sqlite3_interrupt`), or drops the work
/// if it has not started, so that a client that gave up frees the connection at once.
final class ConnectionQueue: @unchecked Sendable {  // `connection` is touched only on `queue`, which is serial.
    private let queue: DispatchQueue
    private let connection: SQLiteConnection
    private let jobs: Mutex<Jobs>

    /// Which job runs, which were cancelled before they started, and the raw handle to interrupt.
    // @unchecked: the handle is only passed to sqlite3_interrupt, which SQLite allows from any thread.
    private struct Jobs: @unchecked Sendable {
        var next: UInt64 = 0
        var running: UInt64?
        var cancelled: Set<UInt64> = []
        /// The connection's handle while it is open; `sqlite3_interrupt` may be called from any thread.
        var handle: OpaquePointer?
    }

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
        self.jobs = Mutex(Jobs(handle: connection.handle))
    }

    /// Runs `body` with the connection on its queue and returns its result; cancellation of the
    /// calling task interrupts it (it then throws `cancelled`).
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let job = jobs.withLock { jobs in
            jobs.next += 1
            return jobs.next
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                queue.async {
                    let start = self.jobs.withLock { jobs -> Bool in
                        guard jobs.cancelled.remove(job) == nil else { return false }
                        jobs.running = job
                        return true
                    }
                    guard start else {
                        continuation.resume(throwing: ModelError.interrupted)
                        return
                    }
                    let result = Result { try body(self.connection) }
                    self.jobs.withLock { $0.running = nil }
                    continuation.resume(with: result)
                }
            }
        } onCancel: {
            self.jobs.withLock { jobs in
                if jobs.running == job {
                    if let handle = jobs.handle { sqlite3_interrupt(handle) }
                } else {
                    jobs.cancelled.insert(job)
                }
            }
        }
    }

    /// Closes the connection once the work queued before has finished.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.jobs.withLock { $0.handle = nil }
                self.connection.close()
                continuation.resume()
            }
        }
    }
}

extension ModelError {
    /// What an interrupted (or dropped) statement throws: the caller gave up.
    static let interrupted = ModelError(.cancelled, "the call was cancelled before the store finished it; nothing it would have written was saved")
}

/// Carries a freshly opened connection from its queue to the ``ConnectionQueue`` that owns it.
private struct SQLiteConnectionBox: @unchecked Sendable {  // handed over once, then used on one queue only.
    let connection: SQLiteConnection
    init(_ connection: SQLiteConnection) { self.connection = connection }
}
