import Synchronization

/// The reader connections: each read goes to the reader with the least work queued.
final class ReaderPool: Sendable {
    private let readers: [ConnectionQueue]
    private let pending: Mutex<[Int]>

    init(_ readers: [ConnectionQueue]) {
        precondition(!readers.isEmpty, "a reader pool needs at least one connection")
        self.readers = readers
        self.pending = Mutex(Array(repeating: 0, count: readers.count))
    }

    /// Runs `body` on the least busy reader.
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let index = pending.withLock { counts in
            let chosen = counts.indices.min { counts[$0] < counts[$1] } ?? 0
            counts[chosen] += 1
            return chosen
        }
        defer { pending.withLock { $0[index] -= 1 } }
        return try await readers[index].run(body)
    }

    /// Closes every reader once its queued work has finished.
    func close() async {
        for reader in readers { await reader.close() }
    }
}
