import Dispatch
import ModelCore
import Synchronization

/// The reader connections: each read goes to the reader with the least work queued.
final class ReaderPool: Sendable {
    private let readers: [ConnectionQueue]
    private let pending: Mutex<[Int]>

    /// A pool of `readers`; ``SQLiteStore`` always opens at least one.
    init(_ readers: [ConnectionQueue]) {
        self.readers = readers
        self.pending = Mutex(Array(repeating: 0, count: readers.count))
    }

    /// Where a read may run.
    enum Placement {
        /// On the reader's queue: work that may take long, off Swift's cooperative threads,
        /// where cancelling it interrupts it.
        case queue
        /// On the calling thread when the reader has nothing else to do, which saves two thread
        /// hand-offs (to the reader's queue and back): a few objects by key.
        case hereIfIdle
        /// On the calling thread when the reader is idle, moved to the reader's queue if it runs
        /// past ``hereBudget`` (then the steps already run are lost): a read whose length is not
        /// known beforehand, such as a query.
        case hereWithinBudget
    }

    /// Thousands of SQLite steps a read tried on the calling thread may take before it moves to
    /// the reader's queue: a millisecond or two.
    static let hereBudget = 64

    /// Thrown by a read tried on the calling thread (``Placement/hereWithinBudget``,
    /// ``run(tryingHere:otherwise:)``) that finds, before it starts its work, that the work
    /// would run past ``hereBudget``: it moves to the reader's queue at once.
    struct BelongsOnQueue: Error {}

    /// Reads that ran past ``hereBudget`` (or found they would) and moved to their reader's queue.
    var movedToQueue: Int { moved.load(ordering: .relaxed) }
    private let moved = Atomic(0)

    var readerCount: Int { readers.count }

    /// Runs `body` on the least busy reader, placed as `placement` says.
    func run<T: Sendable>(_ placement: Placement = .queue, _ body: @escaping @Sendable (SQLiteConnection) throws -> T)
        async throws -> T
    {
        let (index, idle) = try reserve()
        defer { pending.withLock { $0[index] -= 1 } }
        switch placement {
        case .hereIfIdle where idle:
            return try readers[index].runHere(body)
        case .hereWithinBudget where idle:
            if let result = try readers[index].runHere(withinBudget: Self.hereBudget, body) { return result }
            moved.add(1, ordering: .relaxed)
        default:
            break
        }
        return try await readers[index].run(body)
    }

    /// Runs `body` on the calling thread if the least busy reader is idle; nil, having run
    /// nothing, if every reader has work. With a `budget` (thousands of SQLite steps, as
    /// ``hereBudget``), a body that runs past it is stopped, and nil is returned too: `body`
    /// must then only read.
    func runIfIdle<T>(withinBudget budget: Int? = nil, _ body: (SQLiteConnection) throws -> T) throws -> T? {
        let (index, idle) = try reserve()
        defer { pending.withLock { $0[index] -= 1 } }
        guard idle else { return nil }
        guard let budget else { return try readers[index].runHere(body) }
        return try readers[index].runHere(withinBudget: budget, body)
    }

    /// The budget of a read tried before the usual one (``SQLiteStore/fetchWithoutWaiting(_:)``),
    /// which runs it again when it runs past: a quarter of ``hereBudget``, so that a long query
    /// loses little.
    static let firstTryBudget = hereBudget / 4

    /// Runs `short` on the calling thread within ``hereBudget`` when the least busy reader is
    /// idle, as ``Placement/hereWithinBudget`` does; when it runs past the budget, or no reader
    /// is idle, runs `long` on that reader's queue instead, with the other readers as helpers it
    /// may lend part of the work to. Both must only read.
    func run<T: Sendable>(
        tryingHere short: ((SQLiteConnection) throws -> T)?,
        otherwise long: @escaping @Sendable (SQLiteConnection, ReaderHelpers) throws -> T
    ) async throws -> T {
        let (index, idle) = try reserve()
        defer { pending.withLock { $0[index] -= 1 } }
        if let short, idle {
            if let result = try readers[index].runHere(withinBudget: Self.hereBudget, short) { return result }
            moved.add(1, ordering: .relaxed)
        }
        let helpers = ReaderHelpers(pool: self, lead: index)
        return try await readers[index].run { try long($0, helpers) }
    }

    /// Counts a read as queued on the least busy reader (the caller takes it off again): that
    /// reader, and whether it had nothing else to do.
    private func reserve() throws(ModelError) -> (index: Int, idle: Bool) {
        let (index, idle) = pending.withLock { counts -> (Int, Bool) in
            guard let chosen = counts.indices.min(by: { counts[$0] < counts[$1] }) else { return (-1, false) }
            counts[chosen] += 1
            return (chosen, counts[chosen] == 1)
        }
        guard index >= 0 else { throw ModelError(.closed, "the store has no reader connection") }
        return (index, idle)
    }

    /// Runs `work` on reader `index`'s queue, after its queued work, counted as work queued there.
    /// `work` is given nil when the connection cannot open.
    fileprivate func submit(to index: Int, _ work: @escaping @Sendable (SQLiteConnection?) -> Void) {
        pending.withLock { $0[index] += 1 }
        readers[index].submit { connection in
            defer { self.pending.withLock { $0[index] -= 1 } }
            work(try? connection.get())
        }
    }

    /// For tests: how many readers keep a read transaction for their next job (``ReadHold``).
    var readersKeepingReads: Int { readers.count { $0.keepsRead } }

    /// For tests: how long a kept read transaction may go unused before its reader ends it.
    func setKeptReadIdleLimit(_ limit: DispatchTimeInterval) {
        for reader in readers { reader.setKeptReadIdleLimit(limit) }
    }

    /// For tests: `handler` is called each time a reader ends the read transaction it kept
    /// (``ReadHold``) because no job used it for ``ConnectionQueue/keptReadIdleLimit``.
    func onIdleRelease(_ handler: (@Sendable () -> Void)?) {
        for reader in readers { reader.onIdleRelease.withLock { $0 = handler } }
    }

    /// Closes every reader once its queued work has finished.
    func close(checkpoint: Bool = true) async {
        for reader in readers { await reader.close(checkpoint: checkpoint) }
    }
}

/// The readers other than the one a read runs on: ``ParallelGroupScan`` lends them parts of a
/// long scan.
struct ReaderHelpers: Sendable {
    fileprivate let pool: ReaderPool
    fileprivate let lead: Int

    /// How many readers can help.
    var count: Int { pool.readerCount - 1 }

    /// Runs `work` on each helping reader's queue (given nil where its connection cannot open).
    func submit(_ work: @escaping @Sendable (SQLiteConnection?) -> Void) {
        for index in 0..<pool.readerCount where index != lead { pool.submit(to: index, work) }
    }
}
