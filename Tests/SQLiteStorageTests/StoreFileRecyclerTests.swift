import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// The emptying of a dropped store's files (``StoreFileRecycler``) for a store whose WAL was
/// copied into its file: the file, longer than the empty database's one page, is cut to it.
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
}
