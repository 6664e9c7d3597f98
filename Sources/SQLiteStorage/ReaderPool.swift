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

    /// Reads that ran past ``hereBudget`` and moved to their reader's queue.
    var movedToQueue: Int { moved.load(ordering: .relaxed) }
    private let moved = Atomic(0)

    /// Runs `body` on the least busy reader, placed as `placement` says.
    func run<T: Sendable>(_ placement: Placement = .queue, _ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let (index, idle) = pending.withLock { counts -> (Int, Bool) in
            guard let chosen = counts.indices.min(by: { counts[$0] < counts[$1] }) else { return (-1, false) }
            counts[chosen] += 1
            return (chosen, counts[chosen] == 1)
        }
        guard index >= 0 else { throw ModelError(.closed, "the store has no reader connection") }
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

    /// Closes every reader once its queued work has finished.
    func close(checkpoint: Bool = true) async {
        for reader in readers { await reader.close(checkpoint: checkpoint) }
    }
}
