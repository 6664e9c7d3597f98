import CSQLite
import Foundation
import ModelCore
import ModelStorage

extension SQLiteStore: StorageBackupWriting {
    /// Copies the store with `VACUUM INTO` on a connection of its own: one read transaction, so
    /// the copy is the store at one commit (every transaction up to its token, none after), and
    /// under WAL writers go on meanwhile. The copy is compact, in rollback-journal mode (one file),
    /// and synced with its directory before this returns.
    public func writeBackup(to path: String) async throws -> BackupSummary {
        _ = try cachedLayout()
        guard !FileManager.default.fileExists(atPath: path) else {
            throw ModelError(.uniqueConstraint, "\(path) exists already; a backup is written to a new file")
        }
        let queue = ConnectionQueue(path: location.path, role: .reader, label: "backup")
        do {
            _ = try await queue.run { connection in
                try connection.run("VACUUM INTO ?1", [.string(path)], cached: false)
            }
            await queue.close(checkpoint: false)
            try SQLiteConnection.sync(path)
            try SQLiteConnection.sync((path as NSString).deletingLastPathComponent)
            return try await SQLiteStorageFactory.summary(ofBackupAt: path, newIdentity: false)
        } catch {
            await queue.close(checkpoint: false)
            unlink(path)
            throw error
        }
    }
}

extension SQLiteStorageFactory: StorageBackupRestoring {
    public func checkBackup(at path: String, newIdentity: Bool) async throws -> BackupSummary {
        try await Self.summary(ofBackupAt: path, newIdentity: newIdentity)
    }

    /// Renames the file into place (the caller's copy is in the same file system: the daemon's
    /// stores directory) and syncs the directory.
    public func installBackup(at path: String, to location: StoreLocation) async throws {
        let target = location.path
        guard !FileManager.default.fileExists(atPath: target) else {
            throw ModelError(.uniqueConstraint, "\(target) exists already", context: ["path": target])
        }
        for suffix in ["-wal", "-shm", "-journal"] { unlink(target + suffix) }
        guard rename(path, target) == 0 else {
            throw ModelError(
                .storageFailure, "cannot move the backup to \(target): \(String(cString: strerror(errno)))",
                context: ["path": target])
        }
        try SQLiteConnection.sync((target as NSString).deletingLastPathComponent)
    }

    /// What the backup at `path` holds, once SQLite's integrity check and modeld's metadata say
    /// it is sound (`invalidArgument` naming the problem otherwise); `newIdentity` first gives
    /// it a new store UUID. The check runs on a connection of its own, off the caller's thread.
    static func summary(ofBackupAt path: String, newIdentity: Bool) async throws -> BackupSummary {
        let refuse = { (reason: String) in refusal(reason, path: path) }
        guard SQLiteConnection.firstBytes(of: path, count: 16) == Array("SQLite format 3\0".utf8) else {
            throw refuse("it is not an SQLite database (a backup is what 'modelctl store backup' writes)")
        }
        let queue = ConnectionQueue(path: path, role: .reader, label: "backup-check")
        do {
            let result = try await queue.run { connection in
                try Self.summary(connection, path: path, newIdentity: newIdentity)
            }
            await queue.close()
            return result
        } catch let error as ModelError {
            await queue.close()
            let primary = Int32(error.context["sqliteCode"] ?? "").map { $0 & 0xFF }
            guard primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT else { throw error }
            throw refuse(error.message)
        }
    }

    private static func refusal(_ reason: String, path: String) -> ModelError {
        ModelError(.invalidArgument, "the file is not a sound modeld backup: \(reason)", context: ["path": path])
    }

    private static func summary(
        _ connection: SQLiteConnection, path: String, newIdentity: Bool
    ) throws -> BackupSummary {
        let refuse = { (reason: String) in refusal(reason, path: path) }
        var problems: [String] = []
        try connection.query("PRAGMA integrity_check(5)", cached: false) { problems.append($0.text(0)) }
        guard problems == ["ok"] else {
            throw refuse("SQLite's integrity check found: \(problems.joined(separator: "; "))")
        }
        let hasMeta = try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = '_modeld_meta'")
        guard hasMeta == 1 else { throw refuse("it is an SQLite database but not a modeld store") }
        // modeld makes no trigger and no view; one in a backup would run inside the daemon's saves
        // and reads of the store, with the daemon's rights, whatever its restorer may do.
        let foreign =
            try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE type IN ('trigger', 'view')") ?? 0
        guard foreign == 0 else {
            throw refuse(
                "it holds \(foreign) trigger(s) or view(s), which modeld never makes; a backup is what 'modelctl store backup' writes"
            )
        }
        return try connection.transaction(write: newIdentity) {
            if newIdentity {
                try StoreMetadata.setValue(UUID().uuidString.lowercased(), for: "storeIdentifier", connection)
            }
            guard let text = try StoreMetadata.value(for: "storeIdentifier", connection),
                let uuid = UUID(uuidString: text)
            else { throw refuse("its store UUID is missing or unreadable") }
            let schema: ResolvedSchema
            do {
                schema = try StoreMetadata.schema(connection)
            } catch {
                throw refuse("its schema cannot be read (\(error))")
            }
            let token = try StoreMetadata.sequence(StoreMetadata.historySequence, connection)
            return BackupSummary(
                storeIdentifier: uuid, token: token > 0 ? HistoryToken(token) : nil,
                schemaVersionHash: schema.entityNames.isEmpty ? "" : schema.versionHash,
                size: BackupFiles.size(of: path), format: "sqlite")
        }
    }
}

/// The size of backup files.
enum BackupFiles {
    static func size(of path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}
