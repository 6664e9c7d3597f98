import ModelCore
import Synchronization

/// The single writer of a store that a ``GroupCommit`` runs saves on: one connection, on a queue
/// of its own, in one transaction at a time. Each backend says how its transactions and
/// savepoints are spelled; the methods other than ``submit(_:)`` and ``interrupt()`` are called
/// on the writer's queue, from the job ``submit(_:)`` runs.
public protocol GroupCommitWriter: Sendable {
    /// The writer's connection, as a save's work sees it.
    associatedtype Connection
    /// What a save's savepoint keeps beside the backend's own (SQLite: the group's sequences).
    associatedtype Checkpoint

    /// Runs `body` on the writer's queue, after the jobs submitted before it, with the
    /// connection (or the error opening it).
    func submit(_ body: @escaping @Sendable (Result<Connection, any Error>) -> Void)
    /// Stops the statement the writer is running, where the backend can (a save running alone).
    func interrupt()
    /// Begins a group's transaction; `alone` when the group is one save.
    func begin(_ connection: Connection, alone: Bool) throws
    /// Marks a savepoint before a save of a group, once one of the group has failed.
    func savepoint(_ connection: Connection) throws -> Checkpoint
    /// Keeps what the save since the last savepoint did.
    func release(_ connection: Connection) throws
    /// Undoes the save since `checkpoint`; false when it could not (the transaction ended under it).
    func rollback(to checkpoint: Checkpoint, _ connection: Connection) -> Bool
    /// Ends the transaction, undoing it, if it has not ended already.
    func rollback(_ connection: Connection)
    /// Commits the group's transaction, durably.
    func commit(_ connection: Connection) throws
    /// The transaction is over, committed or not.
    func end(_ connection: Connection)
}

/// Group commit on a store's writer, for every backend. Saves that arrive while the writer is
/// busy wait together, then run in one transaction, and one commit (one sync) makes all of them
/// durable before any of them returns. A save that fails throws alone; the others of its group
/// still commit. Saves rarely fail, so a group first runs without a savepoint a save: when one
/// fails, the transaction is rolled back and the others run again in a new one, each in a
/// savepoint of its own from then on, so that a later failure undoes only its own save. A save
/// that waits alone runs in a transaction of its own, as it would without grouping.
///
/// Each save keeps its own history transaction and token, in the order the saves ran, so a
/// group reads exactly like the same saves made one after another.
///
/// Cancelling a save that has not started drops it (it throws `interrupted`). A save running
/// alone is interrupted where the writer can (``GroupCommitWriter/interrupt()``); one running in
/// a group is left to finish, since an interrupted write may roll back the whole transaction,
/// the other saves included.
///
/// Its methods are inlinable so that each backend's module specializes them for its writer:
/// unspecialized, a save paid about 30,000 instructions of generic metadata look-ups (callgrind).
public final class GroupCommit<Writer: GroupCommitWriter>: Sendable {
    /// One save's work on the writer's connection, inside the transaction.
    public typealias Work = @Sendable (Writer.Connection) throws -> SaveResult

    @usableFromInline typealias Outcome = GroupCommitOutcome

    @usableFromInline struct Waiting: Sendable {
        @usableFromInline let id: UInt64
        @usableFromInline let work: Work
        @usableFromInline let outcome: Outcome

        @inlinable init(id: UInt64, work: @escaping Work, outcome: Outcome) {
            self.id = id
            self.work = work
            self.outcome = outcome
        }
    }

    @usableFromInline struct State {
        @inlinable init() {}
        @usableFromInline var nextID: UInt64 = 0
        /// Saves waiting for the next group.
        @usableFromInline var queued: [Waiting] = []
        /// Whether a job that takes the queued saves is on the writer's queue.
        @usableFromInline var isScheduled = false
        /// Saves of the group under way that have not started yet, and those of them cancelled.
        @usableFromInline var taken: Set<UInt64> = []
        @usableFromInline var cancelled: Set<UInt64> = []
        /// The save running now, and whether it runs alone (then it may be interrupted).
        @usableFromInline var running: (id: UInt64, alone: Bool)?
        /// Groups committed so far.
        @usableFromInline var committedGroups = 0
        /// Actions waiting for this many saves to be queued (``whenQueued(atLeast:_:)``).
        @usableFromInline var queueWatchers: [(count: Int, action: @Sendable () -> Void)] = []

        /// Takes the actions of the watchers the queue has reached.
        @inlinable mutating func reachedWatchers() -> [@Sendable () -> Void] {
            guard !queueWatchers.isEmpty else { return [] }
            let reached = queueWatchers.filter { $0.count <= queued.count }.map(\.action)
            queueWatchers.removeAll { $0.count <= queued.count }
            return reached
        }
    }

    @usableFromInline let writer: Writer
    @usableFromInline let state = Mutex(State())
    /// Told the number of saves of each group committed (the daemon's metrics).
    @usableFromInline let committed: @Sendable (Int) -> Void

    public init(writer: Writer, committed: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.writer = writer
        self.committed = committed
    }

    /// How many saves wait for the next group, and how many groups have committed.
    @inlinable public var counts: (queued: Int, committedGroups: Int) {
        state.withLock { ($0.queued.count, $0.committedGroups) }
    }

    /// Runs `action` once at least `count` saves wait for the next group (at once if they do
    /// now), on the task that queued the last of them: for tests, which queue saves behind a
    /// held writer from other tasks and wait for them to be queued.
    public func whenQueued(atLeast count: Int, _ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.queued.count >= count { return true }
            state.queueWatchers.append((count, action))
            return false
        }
        if now { action() }
    }

    /// Runs `work` in the next group and returns its result once the group has committed.
    @inlinable public nonisolated(nonsending) func save(_ work: @escaping Work) async throws -> SaveResult {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Checked under the lock: a cancellation either is seen there or finds the save queued.
                if enqueue(work, outcome: .task(continuation), id: id, unlessCancelled: true) == nil {
                    continuation.resume(throwing: ModelError.interrupted)
                }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// Runs `work` in the next group, as ``save(_:)`` does, and hands its result to
    /// `completion` once the group has committed (on the writer's thread), or the error that
    /// ended it: for a caller without a task to suspend. Returns the save's number, for
    /// ``cancel(_:)``.
    @inlinable public func submit(
        _ work: @escaping Work, completion: @escaping @Sendable (Result<SaveResult, any Error>) -> Void
    ) -> UInt64 {
        // Without `unlessCancelled` it is always queued.
        enqueue(work, outcome: .completion(completion), id: nil, unlessCancelled: false)!
    }

    /// Queues `work` for the next group as save `id` (a new number when nil), scheduling a
    /// group if none is, and returns its number; nil, queuing nothing, when `unlessCancelled`
    /// and the current task is cancelled.
    @inlinable func enqueue(_ work: @escaping Work, outcome: Outcome, id: UInt64?, unlessCancelled: Bool) -> UInt64? {
        let (queued, schedule, reached) = state.withLock { state -> (UInt64?, Bool, [@Sendable () -> Void]) in
            guard !(unlessCancelled && Task.isCancelled) else { return (nil, false, []) }
            if id == nil { state.nextID += 1 }
            let number = id ?? state.nextID
            state.queued.append(Waiting(id: number, work: work, outcome: outcome))
            defer { state.isScheduled = true }
            return (number, !state.isScheduled, state.reachedWatchers())
        }
        for action in reached { action() }
        if schedule { scheduleGroup() }
        return queued
    }

    /// Gives up the save `id` made by ``submit(_:completion:)``, as cancelling ``save(_:)``'s
    /// task does: one not started yet ends with `interrupted`; one running alone is interrupted
    /// where the writer can; one running in a group finishes.
    @inlinable public func cancel(_ id: UInt64) {
        let dropped = state.withLock { state -> Waiting? in
            if let index = state.queued.firstIndex(where: { $0.id == id }) { return state.queued.remove(at: index) }
            if let running = state.running, running.id == id {
                if running.alone { writer.interrupt() }
            } else if state.taken.contains(id) {
                state.cancelled.insert(id)
            }
            return nil
        }
        dropped?.outcome(.failure(ModelError.interrupted))
    }

    @inlinable func scheduleGroup() {
        writer.submit { opened in self.runGroup(opened) }
    }

    /// On the writer's queue: takes every queued save and runs them as one group; schedules the
    /// next group if more saves arrived meanwhile.
    @inlinable func runGroup(_ opened: Result<Writer.Connection, any Error>) {
        let group = state.withLock { state in
            defer { state.queued = [] }
            state.taken = Set(state.queued.map(\.id))
            return state.queued
        }
        switch opened {
        case .success(let connection): run(group[...], on: connection)
        case .failure(let error): fail(group[...], with: error)
        }
        let more = state.withLock { state -> Bool in
            state.isScheduled = !state.queued.isEmpty
            return state.isScheduled
        }
        if more { scheduleGroup() }
    }

    /// Runs `group` in one transaction, or in several if a save fails outside a savepoint, or
    /// the backend rolls one back under a save (a full disk, say): that save throws, and the
    /// others, those done before it included, go on in a new transaction.
    @inlinable func run(_ group: ArraySlice<Waiting>, on connection: Writer.Connection) {
        var rest = group
        // Whether each save of the group runs in a savepoint: once one has failed.
        var guarded = false
        while !rest.isEmpty {
            let alone = rest.count == 1
            do {
                try writer.begin(connection, alone: alone)
            } catch {
                fail(rest, with: error)
                return
            }
            defer { writer.end(connection) }
            var done: [(Waiting, SaveResult)] = []
            var rolledBack = false
            while !rolledBack, let save = rest.popFirst() {
                guard begin(save.id, alone: alone) else {
                    save.outcome(.failure(ModelError.interrupted))
                    continue
                }
                var checkpoint: Writer.Checkpoint?
                do {
                    if guarded && !alone { checkpoint = try writer.savepoint(connection) }
                    let result = try save.work(connection)
                    if checkpoint != nil { try writer.release(connection) }
                    done.append((save, result))
                } catch {
                    save.outcome(.failure(error))
                    // In a savepoint, undo this save alone; otherwise (or if the backend already
                    // rolled the transaction back, or undoing fails) end the transaction, and
                    // run the rest of the group in savepoints.
                    if !(checkpoint.map { writer.rollback(to: $0, connection) } ?? false) {
                        writer.rollback(connection)
                        rolledBack = true
                        guarded = true
                    }
                }
                state.withLock { $0.running = nil }
            }
            if rolledBack {
                // The transaction ended under a save, which has thrown; the saves done before it
                // were undone with it, so they run again in a new one, in savepoints.
                rest = ArraySlice(done.map(\.0)) + rest
                continue
            }
            // Every path that ends the transaction sets `rolledBack`, so it is open here.
            var commit: Result<Void, any Error> = .success(())
            do {
                try writer.commit(connection)
                state.withLock { $0.committedGroups += 1 }
                committed(done.count)
            } catch {
                writer.rollback(connection)
                commit = .failure(error)
            }
            for (save, result) in done { save.outcome(commit.map { result }) }
        }
    }

    /// Fails `saves`, none of which has started, with `error`.
    @inlinable func fail(_ saves: ArraySlice<Waiting>, with error: any Error) {
        state.withLock {
            $0.taken = []; $0.cancelled = []
        }
        for save in saves { save.outcome(.failure(error)) }
    }

    /// Marks `id` as running, or returns false if it was cancelled before it started.
    @inlinable func begin(_ id: UInt64, alone: Bool) -> Bool {
        state.withLock { state in
            state.taken.remove(id)
            guard state.cancelled.remove(id) == nil else { return false }
            state.running = (id, alone)
            return true
        }
    }
}

/// Where a save's outcome goes: the task awaiting ``GroupCommit/save(_:)``, or the completion
/// given to ``GroupCommit/submit(_:completion:)``. Outside the generic class, which it does not
/// depend on: nested, its metadata was looked up at run time each time a waiting save was
/// copied or destroyed (seven times a save, about 2,300 instructions; callgrind).
@usableFromInline enum GroupCommitOutcome: Sendable {
    case task(CheckedContinuation<SaveResult, any Error>)
    case completion(@Sendable (Result<SaveResult, any Error>) -> Void)

    @inlinable func callAsFunction(_ result: Result<SaveResult, any Error>) {
        switch self {
        case .task(let continuation): continuation.resume(with: result)
        case .completion(let completion): completion(result)
        }
    }
}

extension ModelError {
    /// What an interrupted (or dropped) statement or save throws: the caller gave up.
    public static let interrupted = ModelError(
        .cancelled, "the call was cancelled before the store finished it; nothing it would have written was saved")
}
