import Foundation
import Glibc
import ModelCore
import Synchronization

/// Keeps the files of dropped SQLite stores and gives them, emptied, to the next stores created
/// in the same directory (``SQLiteStorageFactory`` with `recyclesFiles`, as the daemon runs it).
///
/// Making and freeing files costs more than writing to them. Creating a file costs a new inode,
/// and on ext4 that costs more the more files were deleted in the last seconds (the allocator
/// steps over recently freed inodes one by one). Freeing a file's blocks, by deleting it or by
/// cutting it short, waits for the device to discard them on a filesystem mounted with
/// `discard` (about 75 µs a file here, three files a store). And a sync that grows a file must
/// write its inode too (fdatasync: about 125 µs against 75 µs for one that overwrites).
///
/// So a drop only renames the store's files (the database, its `-wal` and `-shm`) into
/// `<stores>/.recycled`, under a `pending-` name, and returns; the set is emptied there on a
/// queue of the recycler's own, off every client's path:
/// - the database file gets the pages of an empty WAL database with modeld's metadata tables
///   (``EmptyDatabaseImage``) and is cut to them; a store made of it commits to its WAL alone,
///   with no first page to sync and no metadata table to create;
/// - the WAL keeps up to ``walBytesKept`` of its blocks but loses its header, so SQLite finds no
///   frame in it and writes the next store's from its start, under new salts, as it does when it
///   reuses its own WAL; the frames after them, of the old store and older salts, are never read;
/// - the `-shm` file is cut to nothing (SQLite rebuilds it).
/// Both the database and the WAL are synced before the set is renamed out of its `pending-` name:
/// a new store only gets a set whose old pages no crash can bring back. The bin is emptied when
/// the daemon starts. At most ``capacity`` sets are kept; beyond that, files are deleted. The
/// recycler keeps count of the sets in the bin and the names of the emptied ones, rather than
/// reading the directory at each drop and creation (the bin is its own from the start).
///
/// A file that a connection still has open is not recycled: another process's (an embedded
/// container on the same store) would go on writing into the next store's file, and one of
/// this process's would share SQLite's view of the file with the next store's connections.
final class StoreFileRecycler: Sendable {
    /// `<stores>/.recycled`.
    let directory: URL
    /// How many sets of files are kept, emptied or not yet.
    let capacity: Int
    /// The most of a WAL's bytes kept for the next store.
    let walBytesKept: Int64

    static let suffixes = SQLiteStore.fileSuffixes
    private static let pendingPrefix = "pending-"

    /// Where sets are emptied, one after another.
    private let queue = DispatchQueue(label: "modeld.store-file-recycler", qos: .utility)
    /// The empty database's bytes, once SQLite has made them (on `queue`).
    private let image = Mutex<[UInt8]?>(nil)
    private let bin = Mutex(Bin())

    /// What the bin holds.
    private struct Bin {
        /// Sets in the bin, emptied or not yet.
        var count = 0
        /// The names of the emptied sets, the last emptied last.
        var emptied: [String] = []
        /// Whether the bin's directory has been made.
        var isMade = false
    }

    init(storesDirectory: URL, capacity: Int = 8, walBytesKept: Int64 = 1 << 20) {
        directory = storesDirectory.appendingPathComponent(".recycled", isDirectory: true)
        self.capacity = capacity
        self.walBytesKept = walBytesKept
    }

    /// Deletes every set in the bin: at start-up, before any store is created.
    func removeAll() {
        try? FileManager.default.removeItem(at: directory)
        bin.withLock { $0 = Bin() }
    }

    /// Moves the closed store file at `path`, with its `-wal` and `-shm`, into the bin, and has
    /// them emptied there in the background. Returns false, having moved nothing, when the bin is
    /// full, a connection (of this process or another) has the store open, or a file cannot be
    /// moved: the caller then deletes the files.
    func recycle(_ path: String) -> Bool {
        guard access(path, F_OK) == 0, !Self.isOpen(path), reserve() else { return false }
        let name = UUID().uuidString.lowercased() + ".sqlite"
        let pending = directory.path + "/" + Self.pendingPrefix + name
        // The -wal and -shm first: the database file is what makes a set, and it moves last.
        for suffix in Self.suffixes.reversed() where access(path + suffix, F_OK) == 0 {
            guard rename(path + suffix, pending + suffix) == 0 else {
                for moved in Self.suffixes { rename(pending + moved, path + moved) }
                bin.withLock { $0.count -= 1 }
                return false
            }
        }
        queue.async { self.empty(pending, named: name) }
        return true
    }

    /// Takes a place in the bin for a set, making the bin's directory the first time; false if
    /// the bin is full or cannot be made.
    private func reserve() -> Bool {
        bin.withLock { bin in
            guard bin.count < capacity else { return false }
            if !bin.isMade {
                guard
                    (try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)) != nil
                else { return false }
                bin.isMade = true
            }
            bin.count += 1
            return true
        }
    }

    /// Returns once the sets dropped so far have been emptied (or deleted).
    func finishEmptying() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.async { done.resume() }
        }
    }

    /// Moves an emptied set into place for a new store at `path`, if the bin has one; otherwise
    /// SQLite creates the files.
    @discardableResult
    func claim(for path: String) -> Bool {
        while let name = bin.withLock({ bin -> String? in
            guard let name = bin.emptied.popLast() else { return nil }
            bin.count -= 1
            return name
        }) {
            let set = directory.path + "/" + name
            // A set that cannot be moved (its files gone from the bin) is let go.
            guard rename(set, path) == 0 else {
                for suffix in Self.suffixes { unlink(set + suffix) }
                continue
            }
            for suffix in Self.suffixes.dropFirst() {
                guard rename(set + suffix, path + suffix) != 0 else { continue }
                // A set without this file: none may stay beside the new store from an earlier one.
                unlink(set + suffix)
                unlink(path + suffix)
            }
            return true
        }
        return false
    }

    /// On `queue`: empties the set at `pending` (see the type's description), syncs it, and
    /// renames it to `name`; deletes it if any step fails.
    private func empty(_ pending: String, named name: String) {
        let ready = directory.path + "/" + name
        do throws(ModelError) {
            let image = try self.image.withLock { image throws(ModelError) in
                if let image { return image }
                let made = try EmptyDatabaseImage.make(in: directory)
                image = made
                return made
            }
            try Self.rewrite(pending, with: image)
            try Self.forgetFrames(pending + "-wal", keeping: walBytesKept)
            try Self.check(Glibc.truncate(pending + "-shm", 0) == 0 || errno == ENOENT, "cut", pending + "-shm")
            for suffix in Self.suffixes.reversed() {
                try Self.check(
                    rename(pending + suffix, ready + suffix) == 0 || errno == ENOENT, "rename", pending + suffix)
            }
            bin.withLock { $0.emptied.append(name) }
        } catch {
            for suffix in Self.suffixes {
                unlink(pending + suffix)
                unlink(ready + suffix)
            }
            bin.withLock { $0.count -= 1 }
        }
    }

    /// Writes `image` over the start of the database file at `path`, cuts the file to it and
    /// syncs its data and size (`fdatasync`). A store that never copied its WAL into the file (a
    /// test's, say) left it at the image's pages: it is not cut, since cutting a file to its
    /// own size still changes its times, and its inode is then written with the sync (about 215
    /// against 145 µs a sync here, one after another).
    private static func rewrite(_ path: String, with image: [UInt8]) throws(ModelError) {
        try overwriteStart(of: path, with: image) { descriptor, size throws(ModelError) in
            if size != Int64(image.count) {
                try check(ftruncate(descriptor, off_t(image.count)) == 0, "cut", path)
            }
            try check(fdatasync(descriptor) == 0, "sync", path)
        }
    }

    /// Zeroes the header of the WAL at `path`, so that SQLite reads no frame in it, cuts it to at
    /// most `limit` bytes, and syncs it. Nothing if the set has no WAL.
    private static func forgetFrames(_ path: String, keeping limit: Int64) throws(ModelError) {
        // SQLite's WAL header is 32 bytes; one that does not start with its magic number means
        // an empty log (https://www.sqlite.org/walformat.html).
        try overwriteStart(of: path, with: [UInt8](repeating: 0, count: 32), missingIsEmpty: true) {
            descriptor, size throws(ModelError) in
            if size > limit { try check(ftruncate(descriptor, off_t(limit)) == 0, "cut", path) }
            try check(fdatasync(descriptor) == 0, "sync", path)
        }
    }

    /// Opens the file at `path`, writes `bytes` at its start, then calls `finish` with the open
    /// descriptor and the size the file had.
    private static func overwriteStart(
        of path: String, with bytes: [UInt8], missingIsEmpty: Bool = false,
        finish: (Int32, Int64) throws(ModelError) -> Void
    ) throws(ModelError) {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        if descriptor < 0, missingIsEmpty, errno == ENOENT { return }
        try check(descriptor >= 0, "open", path)
        defer { close(descriptor) }
        var info = stat()
        try check(fstat(descriptor, &info) == 0, "inspect", path)
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        try check(written == bytes.count, "write", path)
        try finish(descriptor, Int64(info.st_size))
    }

    private static func check(_ succeeded: Bool, _ action: String, _ path: String) throws(ModelError) {
        guard succeeded else {
            throw ModelError(
                .storageFailure,
                "cannot \(action) \(path) in the bin of dropped stores: \(String(cString: strerror(errno)))",
                context: ["path": path])
        }
    }

    /// Whether a connection has the store open, in another process or in this one: every
    /// connection to a WAL database holds a read lock on its `-shm` file's byte 128 (the "DMS"
    /// lock of SQLite's Unix VFS) for as long as it is open. Asked as an open file description's
    /// lock (`F_OFD_GETLK`), which the POSIX locks of this process conflict with too: `F_GETLK`
    /// sees only other processes' locks, and a connection of this process (a fetch still
    /// streaming from a dropped store) would share SQLite's view of the file, its WAL index
    /// among it, with the next store's connections.
    static func isOpen(_ path: String) -> Bool {
        let descriptor = open(path + "-shm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 128
        lock.l_len = 1
        guard fcntl(descriptor, Self.getOpenFileDescriptionLock, &lock) == 0 else { return true }
        return lock.l_type != Int16(F_UNLCK)
    }

    /// Linux's `F_OFD_GETLK` (36 on every architecture, <asm-generic/fcntl.h>), which Glibc
    /// declares only under `_GNU_SOURCE`.
    private static let getOpenFileDescriptionLock: Int32 = 36
}
