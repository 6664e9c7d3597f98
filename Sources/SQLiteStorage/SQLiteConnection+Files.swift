import Foundation
import ModelCore

/// What a connection looks at in its files from outside SQLite: whether a file starts a new store,
/// and syncs by path.
extension SQLiteConnection {
    /// Whether the file at `path` starts a new store, and how: empty, or a small WAL database
    /// (``EmptyDatabaseImage/isImage(_:)``) beside a WAL without frames (missing, shorter than
    /// its header, or with a header that is not one: the frames after it are never read). Taken
    /// for new, a file is written with SQLite's syncs off until the first transaction, which
    /// ``finishCreation()`` then syncs: as durable whatever the file held.
    static func newFile(at path: String) -> NewFile? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        if info.st_size == 0 { return .empty }
        guard info.st_size <= EmptyDatabaseImage.largestSize,
            EmptyDatabaseImage.isImage(firstBytes(of: path, count: Int(info.st_size)))
        else {
            return nil
        }
        let walMagic = firstBytes(of: path + "-wal", count: 4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return walMagic & 0xFFFF_FFFE == 0x377F_0682 ? nil : .emptyDatabase
    }

    /// Up to `count` bytes from the start of the file at `path`; none if it cannot be read.
    static func firstBytes(of path: String, count: Int) -> [UInt8] {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { Glibc.close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, 0) }
        return Array(bytes.prefix(max(read, 0)))
    }

    /// fsync(2) of the file at `target`.
    static func sync(_ target: String) throws(ModelError) {
        let descriptor = Glibc.open(target, O_RDONLY | O_CLOEXEC)
        let synced = descriptor >= 0 && fsync(descriptor) == 0
        let error = errno
        if descriptor >= 0 { Glibc.close(descriptor) }
        guard synced else {
            throw ModelError(
                .storageFailure, "cannot sync \(target) to disk: \(String(cString: strerror(error)))",
                context: ["path": target])
        }
    }
}
