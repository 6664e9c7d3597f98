import Foundation
import ModelCore

/// The bytes of an empty store file as modeld's writer leaves it: one page, SQLite's header
/// saying write-ahead logging, and no table. A file holding them opens as a new store, as an
/// empty file does, but its first commit writes to the WAL alone: nothing to switch to WAL
/// mode, no first page to write and sync (see ``SQLiteConnection/finishCreation()``).
public enum EmptyDatabaseImage {
    /// Asks SQLite for the image: opens a new file in `directory` as a store's writer would, closes
    /// it and reads it back; the file is then deleted. Throws if SQLite left anything but one page
    /// of a WAL database.
    public static func make(in directory: URL) throws(ModelError) -> [UInt8] {
        let path = directory.appendingPathComponent("\(UUID().uuidString.lowercased()).image").path
        defer { for suffix in SQLiteStore.fileSuffixes { unlink(path + suffix) } }
        let connection = try SQLiteConnection(path: path, role: .writer)
        connection.close()
        let bytes = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
        guard isImage(bytes) else {
            throw ModelError(
                .storageFailure,
                "SQLite did not make a one-page WAL database in \(directory.path) (\(bytes.count) bytes)",
                context: ["path": path])
        }
        return bytes
    }

    /// Whether `bytes` are one page of a WAL database: SQLite's magic string, a page size equal
    /// to their count, the file format numbers of WAL (2 and 2) and a size of one page.
    static func isImage(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 512, bytes.starts(with: Array("SQLite format 3\0".utf8)) else { return false }
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let pages = bytes[28..<32].reduce(0) { $0 << 8 | Int($1) }
        return (pageSize == bytes.count || (pageSize == 1 && bytes.count == 65_536)) && bytes[18] == 2 && bytes[19] == 2
            && pages == 1
    }
}
