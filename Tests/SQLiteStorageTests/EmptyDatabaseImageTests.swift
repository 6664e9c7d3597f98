import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// A file holding an empty WAL database with modeld's metadata tables (what the daemon makes of a
/// dropped store's file for the next store) opens as a new store with an identity of its own,
/// also beside a WAL whose header was zeroed over another store's frames: those frames are never
/// read.
@Suite struct EmptyDatabaseImageTests {
    private static let noteSchema = Schema(entities: [
        EntityDescription(name: "Note", attributes: [.init(name: "text", type: .string)])
    ])

    @Test func theImageIsAnEmptyWALDatabaseWithTheMetadataTablesAndItsFileIsGone() async throws {
        try await withTemporaryDirectory { directory in
            let image = try EmptyDatabaseImage.make(in: directory)
            #expect(image.starts(with: Array("SQLite format 3\0".utf8)))
            let pageSize = Int(image[16]) << 8 | Int(image[17])
            let pages = image[28..<32].reduce(0) { $0 << 8 | Int($1) }
            #expect(pageSize * pages == image.count) // the header's pages fill the image
            #expect(image[18] == 2 && image[19] == 2) // WAL
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)

            // Its tables are modeld's metadata tables, with no row: two stores made of it have
            // identities of their own.
            var identities: Set<UUID> = []
            for name in ["a", "b"] {
                let path = directory.appendingPathComponent("\(name).sqlite").path
                #expect(FileManager.default.createFile(atPath: path, contents: Data(image)))
                let reader = try SQLiteConnection(path: path, role: .reader)
                var tables: [String] = []
                try reader.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") {
                    tables.append($0.text(0))
                }
                #expect(try reader.scalarInt("SELECT count(*) FROM _modeld_meta") == 0)
                reader.close()
                #expect(tables == StoreMetadata.createdTables.sorted())
                let store = try await SQLiteStore.open(path: path, applying: Self.noteSchema)
                identities.insert(store.storeIdentifier)
                #expect(try await store.integrityCheck() == ["ok"])
                await store.close()
            }
            #expect(identities.count == 2)
        }
    }

    @Test func anImageBesideAnotherStoresZeroedWALOpensAsANewStoreThatWritesOnlyItsWAL() async throws {
        try await withTemporaryDirectory { directory in
            // A store whose data is all in its WAL, closed as a drop closes it.
            let old = directory.appendingPathComponent("old.sqlite").path
            let oldStore = try await SQLiteStore.open(path: old, applying: SampleTrips.schema)
            _ = try await oldStore.insert(
                "PersonalTrip",
                [
                    [
                        "name": .string("Paris"), "destination": .string("FR"),
                        "startDate": date("2026-03-01"), "endDate": date("2026-03-10"),
                    ]
                ])
            await oldStore.closeForRemoval()
            var wal = try #require(FileManager.default.contents(atPath: old + "-wal").map { [UInt8]($0) })
            #expect(wal.count > 32 && wal[0..<4] == [0x37, 0x7F, 0x06, 0x82])

            // The new file: the image, and the old WAL with its header zeroed.
            let path = directory.appendingPathComponent("new.sqlite").path
            let image = try EmptyDatabaseImage.make(in: directory)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(image)))
            wal.replaceSubrange(0..<32, with: repeatElement(0, count: 32))
            #expect(FileManager.default.createFile(atPath: path + "-wal", contents: Data(wal)))
            #expect(SQLiteConnection.newFile(at: path) == .emptyDatabase)

            let store = try await SQLiteStore.open(path: path, applying: Self.noteSchema)
            #expect(store.storeIdentifier != oldStore.storeIdentifier)
            #expect(try await store.schema().entityNames == ["Note"])
            let ids = try await store.insert("Note", [["text": .string("kept")]])
            // Everything went to the WAL, under a header of its own; the file is untouched.
            #expect(FileManager.default.contents(atPath: path).map { [UInt8]($0) } == image)
            #expect(SQLiteConnection.newFile(at: path) == nil)
            await store.closeForRemoval()

            let reopened = try await SQLiteStore.open(path: path)
            #expect(reopened.storeIdentifier == store.storeIdentifier)
            #expect(try await reopened.schema().entityNames == ["Note"])
            #expect(try await reopened.snapshots(for: ids).first?["text"] == .string("kept"))
            #expect(try await reopened.integrityCheck() == ["ok"])
            await reopened.close()
        }
    }

    @Test func onlyAnEmptyFileOrAnEmptyDatabaseWithoutFramesIsNew() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("s.sqlite").path
            #expect(SQLiteConnection.newFile(at: path) == nil) // no file: SQLite makes an empty one
            #expect(FileManager.default.createFile(atPath: path, contents: Data()))
            #expect(SQLiteConnection.newFile(at: path) == .empty)
            let image = try EmptyDatabaseImage.make(in: directory)
            var other = image
            other[31] &+= 1 // a header that says one page more than the file holds
            #expect(FileManager.default.createFile(atPath: path, contents: Data(other)))
            #expect(SQLiteConnection.newFile(at: path) == nil)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(image)))
            #expect(SQLiteConnection.newFile(at: path) == .emptyDatabase)
            // A WAL with a header of its own holds frames of this database.
            #expect(
                FileManager.default.createFile(
                    atPath: path + "-wal", contents: Data([0x37, 0x7F, 0x06, 0x83] + [UInt8](repeating: 0, count: 60))))
            #expect(SQLiteConnection.newFile(at: path) == nil)
        }
    }
}
