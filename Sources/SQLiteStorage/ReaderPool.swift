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

    /// Runs `body` on the least busy reader.
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let index = pending.withLock { counts in
            guard let chosen = counts.indices.min(by: { counts[$0] < counts[$1] }) else { return -1 }
            counts[chosen] += 1
            return chosen
        }
        guard index >= 0 else { throw ModelError(.closed, "the store has no reader connection") }
        defer { pending.withLock { $0[index] -= 1 } }
        return try await readers[index].run(body)
    }

    /// Closes every reader once its queued work has finished.
    func close(checkpoint: Bool = true) async {
        for reader in readers { await reader.close(checkpoint: checkpoint) }
    }
}
