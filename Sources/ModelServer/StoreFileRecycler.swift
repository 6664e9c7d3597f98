import Foundation
import Glibc

/// Keeps the emptied files of dropped SQLite stores and gives them to the next stores created.
///
/// Creating a file costs a new inode, and on ext4 that costs more the more files were deleted
/// in the last seconds (the allocator steps over recently freed inodes one by one): with a store
/// made and dropped per test, creating the store's three files took a third of the daemon's
/// time. So a dropped store's files (the database, its `-wal` and `-shm`) are renamed into
/// `<stores>/.recycled` and truncated to nothing, which frees their data as surely as deleting
/// them; a new store renames a set into place, where SQLite finds three empty files, that is, a
/// new store. At most ``capacity`` sets are kept; beyond that, files are deleted as before.
///
/// A file that another process still has open (an embedded container on the same store) is not
/// recycled: its connection would go on writing into the next store's file.
struct StoreFileRecycler: Sendable {
    /// `<stores>/.recycled`.
    let directory: URL
    /// How many sets of files are kept.
    let capacity: Int

    static let suffixes = ["", "-wal", "-shm"]

    init(storesDirectory: URL, capacity: Int = 8) {
        directory = storesDirectory.appendingPathComponent(".recycled", isDirectory: true)
        self.capacity = capacity
    }

    /// Moves the closed store file at `path`, with its `-wal` and `-shm`, into the bin, emptied.
    /// Returns false, having moved nothing, when the bin is full, another process has the store
    /// open, or a file cannot be moved: the caller then deletes the files.
    func recycle(_ path: String) -> Bool {
        guard FileManager.default.fileExists(atPath: path), !Self.isOpenElsewhere(path) else { return false }
        if let kept = try? FileManager.default.contentsOfDirectory(atPath: directory.path) {
            guard kept.filter({ $0.hasSuffix(".sqlite") }).count < capacity else { return false }
        } else {
            guard (try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)) != nil else { return false }
        }
        let bin = directory.appendingPathComponent(UUID().uuidString.lowercased() + ".sqlite").path
        // The -wal and -shm first: the database file is what makes a set, and it moves last.
        for suffix in Self.suffixes.reversed() where FileManager.default.fileExists(atPath: path + suffix) {
            guard Glibc.truncate(path + suffix, 0) == 0, rename(path + suffix, bin + suffix) == 0 else {
                for moved in Self.suffixes where FileManager.default.fileExists(atPath: bin + moved) { unlink(bin + moved) }
                return false
            }
        }
        return true
    }

    /// Moves a set of emptied files into place for a new store at `path`, if the bin has one;
    /// otherwise SQLite creates the files.
    func claim(for path: String) {
        guard let kept = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in kept where name.hasSuffix(".sqlite") {
            let bin = directory.appendingPathComponent(name).path
            // Whoever renames the database file has the set; another claimer finds it gone.
            guard Glibc.truncate(bin, 0) == 0, rename(bin, path) == 0 else { continue }
            for suffix in Self.suffixes.dropFirst() {
                if Glibc.truncate(bin + suffix, 0) != 0 || rename(bin + suffix, path + suffix) != 0 {
                    unlink(bin + suffix)
                    unlink(path + suffix)
                }
            }
            return
        }
    }

    /// Whether another process holds SQLite's lock on the store's shared memory: every
    /// connection to a WAL database holds a read lock on its `-shm` file's byte 128 (the "DMS"
    /// lock of SQLite's Unix VFS) for as long as it is open.
    static func isOpenElsewhere(_ path: String) -> Bool {
        let descriptor = open(path + "-shm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 128
        lock.l_len = 1
        guard fcntl(descriptor, F_GETLK, &lock) == 0 else { return true }
        return lock.l_type != Int16(F_UNLCK)
    }
}
