import CSQLite
import Dispatch
import Foundation
import ModelCore
import Synchronization

/// A connection and the serial queue it is used on. SQLite calls block, so they run here rather
/// than on Swift's cooperative thread pool; callers await them through a continuation. Cancelling
/// the awaiting task interrupts the statement under way (`sqlite3_interrupt`), or drops the work
/// if it has not started, so that a client that gave up frees the connection at once.
/// A short job may instead run on the caller's thread while the queue is idle (``runHere(_:)``).
/// A reader's queue may keep its read transaction from one job to the next (``ReadHold``).
// `connection`, `isClosed`, `lease` and the release check's state are touched only while
// holding `inUse`.
final class ConnectionQueue: @unchecked Sendable {
    private let queue: DispatchQueue
    private let path: String
    private let role: SQLiteConnection.Role
    /// Opened by the first job.
    private var connection: SQLiteConnection?
    private var isClosed = false
    /// While set, the connection belongs to one holder (a staged migration's open transaction):
    /// other jobs are refused with its error.
    private var lease: (id: UInt64, refusal: ModelError)?
    /// Held while the connection is used, by a job on the queue or one run here: they never overlap.
    private let inUse = NSLock()
    private let jobs: Mutex<Jobs>
    /// Set while the running job is cancelled. SQLite's progress handler checks it, so that a
    /// cancel that comes while the connection opens, or between two statements (when
    /// `sqlite3_interrupt` does nothing), still stops the job's next statement.
    private let cancellation = CancellationFlag()
    /// Whether jobs keep their read transaction for the next (``ReadHold``).
    private let keepsReads: Bool
    /// When a kept read transaction left unused is ended.
    private var releaseChecks = ReleaseChecks()
    /// For tests: whether the connection keeps a read transaction for the next job.
    var keepsRead: Bool { inUse.withLock { connection?.keepsRead ?? false } }

    /// For tests: holds the queue's thread until `release` is signalled, without taking the
    /// connection (it is not a job); `started` is called once it holds it, when every job put
    /// on the queue before has finished and let the connection go.
    func holdQueue(until release: DispatchSemaphore, started: @escaping @Sendable () -> Void) {
        queue.async {
            started()
            release.wait()
        }
    }

    /// For tests: called on the queue each time a kept transaction left unused is ended.
    let onIdleRelease = Mutex<(@Sendable () -> Void)?>(nil)

    /// Which job runs, which were cancelled before they started, and the raw handle to interrupt.
    // @unchecked: the handle is only passed to sqlite3_interrupt, which SQLite allows from any thread.
    private struct Jobs: @unchecked Sendable {
        var next: UInt64 = 0
        var running: UInt64?
        var cancelled: Set<UInt64> = []
        /// Jobs put on the queue that have not yet taken the connection (`inUse`).
        var waiting = 0
        /// The connection's handle while it is open; `sqlite3_interrupt` may be called from any thread.
        var handle: OpaquePointer?
    }

    /// A queue of its own for a connection to `path`, which opens with the queue's first job (an
    /// error opening it is that job's error): a store that is created, used once and dropped
    /// never opens its readers. With `keepsReads`, jobs keep their read transaction for the next.
    init(path: String, role: SQLiteConnection.Role, label: String, keepsReads: Bool = false) {
        self.queue = DispatchQueue(label: "modeld.sqlite.\(label)")
        self.path = path
        self.role = role
        self.keepsReads = keepsReads
        self.jobs = Mutex(Jobs())
    }

    /// What a job does with the queue's lease (see ``run(lease:_:)``).
    enum Lease: Sendable {
        /// An ordinary job: refused while the queue is leased.
        case none
        /// A job of the lease's holder.
        case holding(UInt64)
        /// Leases the queue to `id` if the job succeeds; refuses other jobs with `refusal` until released.
        case acquire(UInt64, refusal: ModelError)
        /// A last job of the holder: the lease ends with it, whether it succeeds or not.
        case release(UInt64)

        var holder: UInt64? {
            switch self {
            case .none, .acquire: nil
            case .holding(let id), .release(let id): id
            }
        }
    }

    private static let leases = Atomic<UInt64>(0)

    /// A lease identifier no other lease has.
    static func newLease() -> UInt64 {
        leases.add(1, ordering: .relaxed).newValue
    }

    /// The connection, opened now if this is the first job, for a job holding `lease` (refused
    /// while another holds the queue). Call holding `inUse` only.
    private func openedConnection(lease holder: UInt64? = nil) throws -> SQLiteConnection {
        if let lease, lease.id != holder, !isClosed { throw lease.refusal }
        if let connection { return connection }
        guard !isClosed else { throw ModelError(.closed, "the store is closed; open it again to use it") }
        let opened = try SQLiteConnection(path: path, role: role)
        opened.stopStatements(when: cancellation)
        connection = opened
        jobs.withLock { $0.handle = opened.handle }
        return opened
    }

    /// Runs `body` with the connection on its queue and returns its result; cancellation of the
    /// calling task interrupts it (it then throws `cancelled`).
    func run<T: Sendable>(
        lease: Lease = .none, _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws -> T {
        let job = jobs.withLock { jobs in
            jobs.next += 1
            jobs.waiting += 1
            return jobs.next
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                queue.async {
                    // Marked running only once it holds the connection: an interrupt must not
                    // reach a job run here that it waits for.
                    self.inUse.withLock {
                        let start = self.jobs.withLock { jobs -> Bool in
                            jobs.waiting -= 1
                            guard jobs.cancelled.remove(job) == nil else { return false }
                            jobs.running = job
                            self.cancellation.set(false)
                            return true
                        }
                        guard start else {
                            continuation.resume(throwing: ModelError.interrupted)
                            return
                        }
                        let result = Result {
                            let connection = try self.openedConnection(lease: lease.holder)
                            return try self.keepingRead(connection) { try body(connection) }
                        }
                        switch lease {
                        case .acquire(let id, let refusal): if case .success = result { self.lease = (id, refusal) }
                        case .release(let id): if self.lease?.id == id { self.lease = nil }
                        case .none, .holding: break
                        }
                        self.jobs.withLock { jobs in
                            jobs.running = nil
                            self.cancellation.set(false)
                        }
                        continuation.resume(with: result)
                    }
                }
            }
        } onCancel: {
            self.jobs.withLock { jobs in
                if jobs.running == job {
                    self.cancellation.set(true)
                    if let handle = jobs.handle { sqlite3_interrupt(handle) }
                } else {
                    jobs.cancelled.insert(job)
                }
            }
        }
    }

    /// Runs `body` on the queue with the connection, or the error opening it, without waiting
    /// for it and without the cancellation handling of ``run(_:)``: for callers, such as
    /// ``SaveBatcher``, that track their own work.
    func submit(_ body: @escaping @Sendable (Result<SQLiteConnection, any Error>) -> Void) {
        jobs.withLock { $0.waiting += 1 }
        queue.async {
            self.inUse.withLock {
                self.jobs.withLock { $0.waiting -= 1 }
                switch Result(catching: { try self.openedConnection() }) {
                case .success(let connection): self.keepingRead(connection) { body(.success(connection)) }
                case .failure(let error): body(.failure(error))
                }
            }
        }
    }

    /// Runs `body` with the connection on the calling thread, waiting for a job on the queue to
    /// finish first if one is running. For short work only: it blocks the caller and cannot be
    /// interrupted. ``ReaderPool`` uses it for a few objects by key when the reader is idle,
    /// saving the two thread hand-offs of going through the queue.
    func runHere<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try inUse.withLock {
            let connection = try openedConnection()
            return try keepingRead(connection) { try body(connection) }
        }
    }

    /// Runs `body` with the connection on the calling thread, as ``runHere(_:)`` does, but stops
    /// its statements once they have run `budget` thousand virtual machine steps between them
    /// (a millisecond or so each): then nothing is returned, and the caller runs it on the queue.
    /// `body` must only read, so that running it again is safe. A body that knows before it
    /// starts that it would run past the budget throws ``ReaderPool/BelongsOnQueue``, and
    /// nothing is returned either.
    func runHere<T>(withinBudget budget: Int, _ body: (SQLiteConnection) throws -> T) throws -> T? {
        try inUse.withLock {
            let connection = try openedConnection()
            // The budget is the body's alone: the kept transaction's end must not be stopped.
            return try keepingRead(connection) { () throws -> T? in
                cancellation.startBudget(budget)
                do {
                    let result = try body(connection)
                    _ = cancellation.endBudget()
                    return result
                } catch is ReaderPool.BelongsOnQueue {
                    _ = cancellation.endBudget()
                    return nil
                } catch {
                    if cancellation.endBudget() { return nil }
                    throw error
                }
            }
        }
    }

    /// Interrupts the statement running on the connection, if any (`sqlite3_interrupt`, which
    /// may be called from any thread).
    func interrupt() {
        jobs.withLock { jobs in
            if let handle = jobs.handle { sqlite3_interrupt(handle) }
        }
    }

    /// Closes the connection once the work queued before has finished; later jobs fail with
    /// `closed`. With `checkpoint` false, closing does not copy the WAL into the file (see
    /// ``SQLiteConnection/close(checkpoint:)``).
    func close(checkpoint: Bool = true) async {
        if closeHereIfIdle(checkpoint: checkpoint) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.jobs.withLock { $0.handle = nil }
                self.inUse.withLock { self.closeConnection(checkpoint: checkpoint) }
                continuation.resume()
            }
        }
    }

    /// Closes the queue on the caller's thread when no job holds the connection or waits for it,
    /// and the close has nothing to write: a connection never opened (a store made and dropped
    /// without a read never opens its readers), or one closed without a checkpoint (a store
    /// dropped: SQLite only unlocks and closes its files). Going through the queue would cost two
    /// thread hand-offs for that. False, having done nothing, otherwise.
    private func closeHereIfIdle(checkpoint: Bool) -> Bool {
        guard inUse.try() else { return false }
        defer { inUse.unlock() }
        guard connection == nil || !checkpoint, jobs.withLock({ $0.waiting == 0 }) else { return false }
        closeConnection(checkpoint: false)
        return true
    }

    /// Closes the connection, if opened, and the queue, for good. Called holding `inUse`.
    private func closeConnection(checkpoint: Bool) {
        jobs.withLock { $0.handle = nil }
        releaseChecks.scheduled = false
        connection?.close(checkpoint: checkpoint)
        connection = nil
        isClosed = true
    }

    /// How long a kept read transaction may go unused before the queue ends it, so that
    /// checkpoints can copy the WAL past its snapshot and the WAL can start over.
    static let keptReadIdleLimit = DispatchTimeInterval.milliseconds(25)

    /// When the checks that end a kept read transaction left unused run. Touched holding `inUse`.
    private struct ReleaseChecks {
        var idleLimit = ConnectionQueue.keptReadIdleLimit
        /// The scheduled check's number: a check whose number is not the last does nothing.
        var generation: UInt64 = 0
        var scheduled = false
        /// Whether a job kept its transaction since the last check.
        var keptSince = false
    }

    /// For tests: how long a kept read transaction may go unused (rather than
    /// ``keptReadIdleLimit``); a check already scheduled is scheduled again with it.
    func setKeptReadIdleLimit(_ limit: DispatchTimeInterval) {
        inUse.withLock {
            releaseChecks.idleLimit = limit
            if releaseChecks.scheduled { scheduleNextCheck() }
        }
    }

    /// Runs `body`, a job holding `inUse`, in the read transaction kept from the last job or
    /// begun for it, when this queue keeps them (``ReadHold``); keeps it afterwards if it may be.
    private func keepingRead<T>(_ connection: SQLiteConnection, _ body: () throws -> T) rethrows -> T {
        guard keepsReads else { return try body() }
        connection.startKeptRead()
        let result: T
        do {
            result = try body()
        } catch {
            _ = connection.finishKeptRead(succeeded: false)
            throw error
        }
        if connection.finishKeptRead(succeeded: true) {
            // A check already scheduled is told this job kept it; otherwise one is scheduled.
            releaseChecks.keptSince = releaseChecks.scheduled
            if !releaseChecks.scheduled { scheduleNextCheck() }
        }
        return result
    }

    /// Schedules a check after the idle limit, in place of any scheduled before. Call holding `inUse`.
    private func scheduleNextCheck() {
        releaseChecks.generation += 1
        releaseChecks.scheduled = true
        let generation = releaseChecks.generation
        queue.asyncAfter(deadline: .now() + releaseChecks.idleLimit) { [weak self] in
            self?.checkRelease(generation)
        }
    }

    /// Ends the kept transaction if no job kept it since the last check; checks again later if
    /// one did.
    private func checkRelease(_ generation: UInt64) {
        inUse.withLock {
            guard releaseChecks.scheduled, releaseChecks.generation == generation else { return }
            guard let connection, connection.keepsRead else {
                releaseChecks.scheduled = false
                return
            }
            if releaseChecks.keptSince {
                releaseChecks.keptSince = false
                scheduleNextCheck()
                return
            }
            connection.endRead()
            releaseChecks.scheduled = false
            onIdleRelease.withLock { $0 }?()
        }
    }
}
