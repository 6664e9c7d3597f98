import Dispatch
import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// A reader keeps its read transaction from one read to the next while no commit comes
/// (``ReadHold``): each read still sees every commit made before it began, from any connection,
/// and a kept transaction does not keep the WAL from being checkpointed and starting over.
@Suite struct KeptReadTests {

    /// A commit by another writer on the same file (another store, as another process would be)
    /// between two reads is seen by the second, by every kind of read, though the reader kept
    /// the transaction of the first.
    @Test func aReadSeesACommitMadeByAnotherWriterSinceTheReaderKeptItsTransaction() async throws {
        try await withStore(Catalog.schema) { store, path in
            store.readers.setKeptReadIdleLimit(.seconds(600))
            let id = try await store.insert("Item", [["title": .string("lamp"), "rank": .int(1)]])[0]
            #expect(try await store.snapshots(for: [id]).first?["title"] == .string("lamp"))
            #expect(store.readers.readersKeepingReads == 1)

            let other = try await openStore(path)
            func retitle(_ title: String) async throws -> Value {
                _ = try await other.save(
                    ChangeSet(updates: [UpdatedObject(id: id, attributes: ["title": .string(title)])]))
                return .string(title)
            }
            var title = try await retitle("desk")
            #expect(try await store.snapshots(for: [id]).first?["title"] == title)
            #expect(store.readers.readersKeepingReads == 1)
            title = try await retitle("chair")
            #expect(try store.snapshotsWithoutWaiting(for: [id])?.first?["title"] == title)
            title = try await retitle("shelf")
            #expect(try await store.objects("Item", "rank == 1").map { $0["title"] } == [title])
            title = try await retitle("stool")
            let fetched = try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Item"))
            #expect(fetched?.objects.first?["title"] == title)
            #expect(store.readers.readersKeepingReads == 1)
            await other.close()
        }
    }

    /// A kept transaction holds the WAL (a checkpoint that would start it over finds it busy)
    /// until its reader, unused, ends it; then the whole WAL is copied and truncated.
    @Test(.timeLimit(.minutes(1))) func aTransactionLeftUnusedEndsAndTheWALCanThenStartOver() async throws {
        try await withStore(Catalog.schema) { store, path in
            let (released, release) = AsyncStream<Void>.makeStream()
            store.readers.onIdleRelease { release.yield() }
            store.readers.setKeptReadIdleLimit(.seconds(600))
            let id = try await store.insert("Item", [["title": .string("lamp")]])[0]
            #expect(try await store.snapshots(for: [id]).count == 1)
            #expect(store.readers.readersKeepingReads == 1)

            let checkpointer = try SQLiteConnection(path: path, role: .reader)
            defer { checkpointer.close() }
            try checkpointer.execute("PRAGMA busy_timeout=0")
            func truncate() throws -> (busy: Int64?, frames: Int64?) {
                var result: (Int64?, Int64?) = (nil, nil)
                try checkpointer.query("PRAGMA wal_checkpoint(TRUNCATE)") { row in
                    result = (row.optionalInt64(0), row.optionalInt64(1))
                }
                return result
            }
            #expect(try truncate().busy == 1)

            // The next release check, soon, finds the transaction unused since the last.
            store.readers.setKeptReadIdleLimit(.milliseconds(5))
            #expect(try await store.snapshots(for: [id]).count == 1)
            for await _ in released { break }
            #expect(store.readers.readersKeepingReads == 0)
            let done = try truncate()
            #expect(done.busy == 0)
            #expect(done.frames == 0)
            let walSize = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
            #expect(walSize == 0)
        }
    }

    /// Saves while a reader reads without pause: the reader's kept transactions do not keep the
    /// WAL from starting over, so it stays within a few times SQLite's checkpoint size instead
    /// of growing with every save.
    @Test func theWALStaysShortWhileAReaderReadsBetweenEverySave() async throws {
        try await withStore(Catalog.schema) { store, path in
            store.readers.setKeptReadIdleLimit(.seconds(600))
            let first = try await store.insert("Item", [["title": .string("first")]])[0]
            let text = String(repeating: "x", count: 2_000)
            let reading = Task { () throws -> (reads: Int, found: Int) in
                var reads = 0, found = 0
                while !Task.isCancelled {
                    found += try await store.snapshots(for: [first]).count
                    reads += 1
                }
                return (reads, found)
            }
            // About 30 pages a save: 400 saves write some 12,000 frames (about 48 MB) in all.
            for save in 0..<400 {
                let objects = (0..<50).map { n -> [String: Value] in
                    ["title": .string("\(save)-\(n)"), "label": .string(text)]
                }
                try await store.insert("Item", objects)
            }
            reading.cancel()
            let (reads, found) = try await reading.value
            #expect(reads > 0)
            #expect(found == reads)
            let walSize = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
            // SQLite's checkpoint size (1,000 pages of 4 KiB) and the saves made while readers
            // kept a checkpoint from finishing: 5-7 MB here, on a busy machine too. Kept
            // transactions without the frame limit let it grow with every save, to 171 MB.
            #expect(walSize < 32 * 1_024 * 1_024, "the WAL grew to \(walSize) bytes")
        }
    }
}
