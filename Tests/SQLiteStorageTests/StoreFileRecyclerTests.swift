import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// The emptying of a dropped store's files (``StoreFileRecycler``) for a store whose WAL was
/// copied into its file: the file, longer than the empty database's pages, is cut to them.
/// (A store that never copied its WAL, as a test's, is covered through the daemon by
/// `StoreRecyclingTests`.)
@Suite struct StoreFileRecyclerTests {
    private static func size(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
    }

    @Test func aFileLongerThanAnEmptyDatabaseIsCutToIt() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("old.sqlite").path
            // Closing the only connection copies the WAL into the file.
            await (try await openStore(path, schema: Catalog.schema)).close()
            let image = try EmptyDatabaseImage.make(in: directory)
            #expect(try #require(Self.size(path)) > image.count)

            let recycler = StoreFileRecycler(storesDirectory: directory)
            #expect(recycler.recycle(path))
            #expect(!FileManager.default.fileExists(atPath: path))
            await recycler.finishEmptying()
            let bin = recycler.directory.path
            let ready = try FileManager.default.contentsOfDirectory(atPath: bin).first {
                $0.hasSuffix(".sqlite") && !$0.hasPrefix("pending-")
            }
            let emptied = bin + "/" + (try #require(ready, "the set was not emptied"))
            #expect(Self.size(emptied) == image.count)
            #expect(FileManager.default.contents(atPath: emptied).map { [UInt8]($0) } == image)
        }
    }

    private static let notes = Schema(entities: [
        EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
    ])

    /// A connection of this process to the file (a backup's, a fetch's still streaming) shares
    /// SQLite's view of it with the next store's connections, which would read the dropped
    /// store's WAL through it: the file is not recycled while one is open.
    @Test func aFileThisProcessHasOpenIsNotRecycled() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("old.sqlite").path
            let store = try await openStore(path, schema: Self.notes)
            let recycler = StoreFileRecycler(storesDirectory: directory)
            #expect(!recycler.recycle(path), "recycled while the store was open")
            #expect(FileManager.default.fileExists(atPath: path))
            await store.closeForRemoval()
            #expect(recycler.recycle(path))
        }
    }

    /// A store closed for removal while a fetch streams from it, its consumer stalled, ends the
    /// stream and closes its connection before the close returns: the files are then the
    /// recycler's, and the fetch is told the store closed.
    @Test func closingForRemovalEndsAFetchStillStreaming() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("old.sqlite").path
            let store = try await openStore(path, schema: Self.notes)
            try await store.insert("Note", (0..<10).map { ["text": .string("note \($0)")] })
            let firstBatch = TestEvent()
            let release = TestEvent()
            let fetch = Task {
                try await store.fetchObjects(FetchDescriptor(entityName: "Note"), batchSize: 1) { _, _ in
                    firstBatch.signal()
                    await release.wait()
                }
            }
            #expect(await firstBatch.wait(), "the fetch never streamed")
            await store.closeForRemoval()
            let recycler = StoreFileRecycler(storesDirectory: directory)
            #expect(recycler.recycle(path), "a connection of the closed store is still open")
            release.signal()
            let error = await #expect(throws: ModelError.self) { try await fetch.value }
            #expect(error?.code == .closed, "\(String(describing: error))")
        }
    }
}
