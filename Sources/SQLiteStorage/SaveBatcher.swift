import CSQLite
import CoreMetrics
import ModelCore
import Synchronization

/// Group commit on the writer connection. Saves that arrive while the writer is busy wait
/// together, then run in one `BEGIN IMMEDIATE` transaction, and one COMMIT (one sync of the WAL,
/// `synchronous=FULL`) makes all of them durable before any of them returns. A save that fails
/// throws alone; the others of its group still commit. Saves rarely fail, so a group first runs
/// without a savepoint a save (two statements each): when one fails, the transaction is rolled
/// back and the others run again in a new one, each in a savepoint of its own from then on, so
/// that a later failure undoes only its own save. A save that waits alone runs in a transaction
/// of its own, as it would without grouping.
///
/// Each save keeps its own history transaction and token, in the order the saves ran, so a
/// group reads exactly like the same saves made one after another.
///
/// Cancelling a save that has not started drops it (it throws `cancelled`). A save running alone
/// is interrupted as any other statement; one running in a group is left to finish, since an
/// interrupted write makes SQLite roll back the whole transaction, the other saves included.
final class SaveBatcher: Sendable {
    /// One save's work on the writer connection, inside the transaction.
    typealias Work = @Sendable (SQLiteConnection) throws -> SaveResult

    private struct Waiting {
        let id: UInt64
        let work: Work
        let continuation: CheckedContinuation<SaveResult, any Error>
    }

    private struct State {
        var nextID: UInt64 = 0
        /// Saves waiting for the next group.
        var queued: [Waiting] = []
        /// Whether a job that takes the queued saves is on the writer's queue.
        var isScheduled = false
        /// Saves of the group under way that have not started yet, and those of them cancelled.
        var taken: Set<UInt64> = []
        var cancelled: Set<UInt64> = []
        /// The save running now, and whether it runs alone (then it may be interrupted).
        var running: (id: UInt64, alone: Bool)?
        /// Groups committed so far.
        var committedGroups = 0
    }

    private let writer: ConnectionQueue
    private let state = Mutex(State())
    /// The saves of each group committed, through swift-metrics (the daemon bootstraps it with
    /// its Prometheus registry; elsewhere it records nowhere).
    private let groupSizes = Recorder(label: "modeld_group_commit_saves")

    init(writer: ConnectionQueue) {
        self.writer = writer
    }

    /// How many saves wait for the next group, and how many groups have committed.
    var counts: (queued: Int, committedGroups: Int) {
        state.withLock { ($0.queued.count, $0.committedGroups) }
    }

    /// Runs `work` in the next group and returns its result once the group has committed.
    func save(_ work: @escaping Work) async throws -> SaveResult {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let schedule = state.withLock { state -> Bool? in
                    // Checked under the lock: a cancellation either is seen here or finds the save queued.
                    guard !Task.isCancelled else { return nil }
                    state.queued.append(Waiting(id: id, work: work, continuation: continuation))
                    defer { state.isScheduled = true }
                    return !state.isScheduled
                }
                switch schedule {
                case nil: continuation.resume(throwing: ModelError.interrupted)
                case true?: scheduleGroup()
                case false?: break
                }
            }
        } onCancel: {
            cancel(id)
        }
    }

    private func cancel(_ id: UInt64) {
        let dropped = state.withLock { state -> Waiting? in
            if let index = state.queued.firstIndex(where: { $0.id == id }) { return state.queued.remove(at: index) }
            if let running = state.running, running.id == id {
                if running.alone { writer.interrupt() }
            } else if state.taken.contains(id) {
                state.cancelled.insert(id)
            }
            return nil
        }
        dropped?.continuation.resume(throwing: ModelError.interrupted)
    }

    private func scheduleGroup() {
        writer.submit { opened in self.runGroup(opened) }
    }

    /// On the writer's queue: takes every queued save and runs them as one group; schedules the
    /// next group if more saves arrived meanwhile.
    private func runGroup(_ opened: Result<SQLiteConnection, any Error>) {
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
    /// SQLite rolls one back under a save (a full disk, say): that save throws, and the others,
    /// those done before it included, go on in a new transaction.
    private func run(_ group: ArraySlice<Waiting>, on connection: SQLiteConnection) {
        var rest = group
        // Whether each save of the group runs in a savepoint: once one has failed.
        var guarded = false
        while !rest.isEmpty {
            do {
                try connection.run("BEGIN IMMEDIATE")
            } catch {
                fail(rest, with: error)
                return
            }
            let alone = rest.count == 1
            // A group's sequences and schema check are remembered for its transaction
            // (``GroupMemo``); a save alone reads and writes each once anyway.
            connection.groupMemo = alone ? nil : GroupMemo()
            defer { connection.groupMemo = nil }
            var done: [(Waiting, SaveResult)] = []
            var rolledBack = false
            while !rolledBack, let save = rest.popFirst() {
                guard begin(save.id, alone: alone) else {
                    save.continuation.resume(throwing: ModelError.interrupted)
                    continue
                }
                let savepoint = guarded && !alone
                let before = savepoint ? connection.groupMemo?.copy() : nil
                do {
                    if savepoint { try connection.run("SAVEPOINT save") }
                    let result = try save.work(connection)
                    if savepoint { try connection.run("RELEASE save") }
                    done.append((save, result))
                } catch {
                    save.continuation.resume(throwing: error)
                    // In a savepoint, undo this save alone; otherwise (or if SQLite already
                    // rolled the transaction back, or undoing fails) end the transaction, and
                    // run the rest of the group in savepoints.
                    let undone =
                        savepoint && connection.isInTransaction
                        && (try? connection.run("ROLLBACK TO save")) != nil
                        && (try? connection.run("RELEASE save")) != nil
                    if undone { connection.groupMemo = before }
                    if !undone {
                        if connection.isInTransaction { _ = try? connection.run("ROLLBACK") }
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
            var outcome: Result<Void, any Error> = .success(())
            do {
                try connection.groupMemo?.flush(connection)
                try connection.run("COMMIT")
                state.withLock { $0.committedGroups += 1 }
                groupSizes.record(done.count)
            } catch {
                if connection.isInTransaction { _ = try? connection.run("ROLLBACK") }
                outcome = .failure(error)
            }
            for (save, result) in done { save.continuation.resume(with: outcome.map { result }) }
        }
    }

    /// Fails `saves`, none of which has started, with `error`.
    private func fail(_ saves: ArraySlice<Waiting>, with error: any Error) {
        state.withLock {
            $0.taken = []; $0.cancelled = []
        }
        for save in saves { save.continuation.resume(throwing: error) }
    }

    /// Marks `id` as running, or returns false if it was cancelled before it started.
    private func begin(_ id: UInt64, alone: Bool) -> Bool {
        state.withLock { state in
            state.taken.remove(id)
            guard state.cancelled.remove(id) == nil else { return false }
            state.running = (id, alone)
            return true
        }
    }
}
