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

    /// Runs `body` on the least busy reader. A `short` read (a few objects by key) runs on the
    /// calling thread when that reader has nothing else to do, which saves two thread hand-offs
    /// (to the reader's queue and back); anything that may take long stays off Swift's
    /// cooperative threads, on the reader's queue, where cancelling it interrupts it.
    func run<T: Sendable>(short: Bool = false, _ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let (index, idle) = pending.withLock { counts -> (Int, Bool) in
            guard let chosen = counts.indices.min(by: { counts[$0] < counts[$1] }) else { return (-1, false) }
            counts[chosen] += 1
            return (chosen, counts[chosen] == 1)
        }
        guard index >= 0 else { throw ModelError(.closed, "the store has no reader connection") }
        defer { pending.withLock { $0[index] -= 1 } }
        if short && idle { return try readers[index].runHere(body) }
        return try await readers[index].run(body)
    }

    /// Closes every reader once its queued work has finished.
    func close(checkpoint: Bool = true) async {
        for reader in readers { await reader.close(checkpoint: checkpoint) }
    }
}
