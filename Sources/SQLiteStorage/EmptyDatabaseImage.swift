import Foundation
import ModelCore

/// The bytes of an empty store file as modeld's writer leaves it: SQLite's header saying
/// write-ahead logging, and modeld's metadata tables (``StoreMetadata``), empty; a few pages. A
/// file holding them opens as a new store, as an empty file does, but its first commit writes to
/// the WAL alone: nothing to switch to WAL mode, no first page to write and sync (see
/// ``SQLiteConnection/finishCreation()``), and no metadata table to create. Creating those four
/// tables was a third of a test store's instructions in the daemon (`CREATE TABLE` parses its
/// statement, then SQLite parses the new schema row again): about 690,000 of 2,930,000.
public enum EmptyDatabaseImage {
    /// Asks SQLite for the image: opens a new file in `directory` as a store's writer would,
    /// creates the metadata tables, closes it (the last connection copies the WAL into the file)
    /// and reads it back; the file is then deleted. Throws if SQLite left anything but a WAL
    /// database of at most ``largestSize`` bytes.
    public static func make(in directory: URL) throws(ModelError) -> [UInt8] {
        let path = directory.appendingPathComponent("\(UUID().uuidString.lowercased()).image").path
        defer { for suffix in SQLiteStore.fileSuffixes { unlink(path + suffix) } }
        let connection = try SQLiteConnection(path: path, role: .writer)
        do {
            try connection.execute("BEGIN IMMEDIATE")
            for statement in StoreMetadata.createStatements { try connection.execute(statement) }
            try connection.execute("COMMIT")
        } catch {
            connection.close()
            throw error
        }
        connection.close()
        let bytes = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
        guard isImage(bytes) else {
            throw ModelError(
                .storageFailure,
                "SQLite did not make a small WAL database in \(directory.path) (\(bytes.count) bytes)",
                context: ["path": path])
        }
        return bytes
    }

    /// The most bytes an image may have (and a file that may be one, ``SQLiteConnection/newFile(at:)``).
    static let largestSize = 65_536

    /// Whether `bytes` are a small WAL database that fills them: SQLite's magic string, the file
    /// format numbers of WAL (2 and 2), and as many pages as the header says, at most
    /// ``largestSize`` bytes.
    static func isImage(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 512, bytes.count <= largestSize, bytes.starts(with: Array("SQLite format 3\0".utf8))
        else { return false }
        // A page size of 65,536 is written as 1.
        let written = Int(bytes[16]) << 8 | Int(bytes[17])
        let pageSize = written == 1 ? 65_536 : written
        let pages = bytes[28..<32].reduce(0) { $0 << 8 | Int($1) }
        return pages >= 1 && pageSize * pages == bytes.count && bytes[18] == 2 && bytes[19] == 2
    }
}
