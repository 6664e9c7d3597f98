import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Synchronization
import Testing

/// Closing a connection's queue: work queued before the close runs first, later work is refused,
/// and a queue with nothing queued closes on the caller's thread when closing writes nothing: it
/// never opened its connection (a store made and dropped without a read never opens its
/// readers), or it closes without a checkpoint (a store dropped).
@Suite struct ConnectionQueueCloseTests {
    @Test func aQueueThatNeverOpenedClosesAtOnceAndRefusesLaterJobs() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store.sqlite").path
            await (try await openStore(path, schema: Catalog.schema)).close()
            let reader = ConnectionQueue(path: path, role: .reader, label: "test-reader")
            await reader.close()
            let refused = await #expect(throws: ModelError.self) {
                try await reader.run { try $0.scalarInt("SELECT count(*) FROM sqlite_master") }
            }
            #expect(refused?.code == .closed)
        }
    }

    /// A job put on the queue before the close opens the connection and runs; the close waits for
    /// it rather than closing the unopened queue under it.
    @Test func aJobQueuedBeforeTheCloseOfAnUnopenedQueueRunsFirst() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store.sqlite").path
            await (try await openStore(path, schema: Catalog.schema)).close()
            let reader = ConnectionQueue(path: path, role: .reader, label: "test-reader")
            let tables = Mutex<Result<Int64?, any Error>?>(nil)
            reader.submit { opened in
                tables.withLock { tables in
                    tables = Result { try opened.get().scalarInt("SELECT count(*) FROM sqlite_master") }
                }
            }
            await reader.close()
            let counted = try #require(tables.withLock { $0 })
            #expect(try (counted.get() ?? 0) > 0)
            await #expect(throws: ModelError.self) { try await reader.run { _ in 1 } }
        }
    }

    /// A store dropped while its writer is idle: the writer's connection is closed on the
    /// caller's thread, while the queue's own thread is held, and its files are let go at once.
    @Test(.timeLimit(.minutes(1))) func anIdleQueueClosedWithoutACheckpointClosesOnTheCallersThread() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store.sqlite").path
            await (try await openStore(path, schema: Catalog.schema)).close()
            let writer = ConnectionQueue(path: path, role: .writer, label: "test-writer")
            try await writer.run { try $0.execute("CREATE TABLE t (x)") }
            #expect(StoreFileRecycler.isOpen(path))
            let held = DispatchSemaphore(value: 0)
            let isHeld = Mutex(true)
            // Held once the job above has let the connection go (its answer can come first).
            await withCheckedContinuation { (holding: CheckedContinuation<Void, Never>) in
                writer.holdQueue(until: held) { holding.resume() }
            }
            // A close that went through the queue would wait for this; it lets go after 10 s so
            // that such a close fails the test rather than hanging it.
            let letGo: @Sendable () -> Bool = {
                isHeld.withLock { wasHeld in
                    defer { wasHeld = false }
                    return wasHeld
                }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 10) { if letGo() { held.signal() } }
            await writer.close(checkpoint: false)
            let closedWhileHeld = letGo()
            #expect(closedWhileHeld)
            #expect(!StoreFileRecycler.isOpen(path))
            if closedWhileHeld { held.signal() }
            // Not copied into the file: the table is still only in the WAL.
            let walSize = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
            #expect((walSize ?? 0) > 0)
            let refused = await #expect(throws: ModelError.self) { try await writer.run { _ in 1 } }
            #expect(refused?.code == .closed)
        }
    }
}
