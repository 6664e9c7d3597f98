import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Synchronization
import Testing

/// Closing a connection's queue: work queued before the close runs first, later work is refused,
/// and a queue that never opened its connection, with nothing queued, closes on the caller's
/// thread (a store made and dropped without a read never opens its readers).
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
}
