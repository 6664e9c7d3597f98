#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import Synchronization

/// A small file of the daemon's settings (JSON), replaced whole: written to `<file>.new`, synced,
/// and renamed over the file, its directory synced after, so that a crash leaves the old file or
/// the new one, never half of one, and a write that returned is not undone by a power loss.
/// Readable by the daemon's user only.
enum SettingsFile {
    /// Removes the file (nothing to keep); a missing one is not an error.
    static func remove(_ file: URL) throws {
        if unlink(file.path) == 0 { return try syncDirectory(of: file) }
        guard errno == ENOENT else { throw failure(file) }
    }

    static func write(_ value: some Encodable, to file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = try encoder.encode(value)
        let temporary = file.path + ".new"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure(file) }
        let synced = FileDescriptorWrites.writeAll(data, to: descriptor) == nil && fsync(descriptor) == 0
        close(descriptor)
        guard synced, rename(temporary, file.path) == 0 else {
            let error = failure(file)
            unlink(temporary)
            throw error
        }
        // The rename is durable once the directory is synced: until then a power loss could
        // bring the old file back (a grant, or an owner's record, lost).
        try syncDirectory(of: file)
    }

    /// fsync(2) of the directory `file` is in.
    private static func syncDirectory(of file: URL) throws {
        let path = file.deletingLastPathComponent().path
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let synced = directory >= 0 && fsync(directory) == 0
        let error = errno
        if directory >= 0 { close(directory) }
        guard synced else {
            throw ModelError(
                .storageFailure,
                "cannot sync \(path) to disk after writing \(file.lastPathComponent): \(String(cString: strerror(error)))"
            )
        }
    }

    private static func failure(_ file: URL) -> ModelError {
        ModelError(.storageFailure, "cannot write \(file.path): \(String(cString: strerror(errno)))")
    }
}

/// A value per store, kept in a settings file of the stores directory (``SettingsFile``): read
/// once when the daemon starts, written whole on every change, removed when no store has one.
final class StoreSettings<Value: Codable & Sendable>: Sendable {
    let file: URL
    /// What the file holds, for the message when it cannot be read.
    private let contents: String
    private let values = Mutex<[String: Value]>([:])
    /// The stores the file holds a value for, as last read or written: a dropped store among
    /// them is written out of it at once (``forget(_:)``).
    private let inFile = Mutex<Set<String>>([])

    init(file: URL, contents: String) {
        self.file = file
        self.contents = contents
    }

    /// Reads the file (none: no store has a value).
    func load() throws {
        guard let data = try? Data(contentsOf: file) else { return }
        guard let loaded = try? JSONDecoder().decode([String: Value].self, from: data) else {
            throw ModelError(
                .storageFailure, "\(file.path) is not \(contents) it should be; move it away to start without them")
        }
        values.withLock { $0 = loaded }
        inFile.withLock { $0 = Set(loaded.keys) }
    }

    func value(for store: String) -> Value? {
        values.withLock { $0[store] }
    }

    /// Whether no store has a value.
    var isEmpty: Bool { values.withLock { $0.isEmpty } }

    /// Sets (nil: removes) a store's value, and writes the file.
    func set(value: Value?, for store: String) throws {
        let all = values.withLock { values in
            values[store] = value
            return values
        }
        try write(all)
    }

    /// Sets a store's value in what the daemon goes by, without writing the file: for a store
    /// that does not outlive the daemon (in memory), whose value the next start would drop
    /// (``keepOnly(_:)``), or one that keeps the value in itself (a store's owner, read back at
    /// the next start). A later write of the file includes it.
    func remember(_ value: Value, for store: String) {
        values.withLock { $0[store] = value }
    }

    /// Drops a dropped store's value. When the file holds one for it (a grant, a restore, a
    /// setting made), the file is written without it at once, before the store's data goes: the
    /// daemon's next start goes by the file before a store's own record of its owner, so a store
    /// made later under the name must not find this one's there (it would get the dropped
    /// store's owner, grants or retention). A value the daemon only remembered (a store that
    /// keeps its owner in itself, one in memory) goes without a write: a test's store, made and
    /// dropped per test, writes no file. If the write fails, the value stays and this throws.
    func forget(_ store: String) throws {
        let (removed, rest) = values.withLock { ($0.removeValue(forKey: store), $0) }
        guard let removed, inFile.withLock({ $0.contains(store) }) else { return }
        do {
            try write(rest)
        } catch {
            values.withLock { $0[store] = $0[store] ?? removed }
            throw error
        }
    }

    /// Drops the values of stores not in `stores` (dropped, or gone, before the daemon started);
    /// writes the file if there were any.
    func keepOnly(_ stores: Set<String>) throws {
        let kept = values.withLock { values -> [String: Value]? in
            let all = values.filter { stores.contains($0.key) }
            guard all.count < values.count else { return nil }
            values = all
            return all
        }
        if let kept { try write(kept) }
    }

    private func write(_ all: [String: Value]) throws {
        if all.isEmpty { try SettingsFile.remove(file) } else { try SettingsFile.write(all, to: file) }
        inFile.withLock { $0 = Set(all.keys) }
    }
}
