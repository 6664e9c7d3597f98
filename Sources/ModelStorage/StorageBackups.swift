import Foundation
import ModelCore

/// What a backup file holds: the store it was taken from and the point of its history it is
/// true at.
public struct BackupSummary: Sendable, Equatable {
    /// The UUID of the store it was taken from.
    public var storeIdentifier: UUID
    /// Every transaction up to this token is in the backup, none after (nil: nothing was ever
    /// saved).
    public var token: HistoryToken?
    /// The version hash of its schema ("" while it has none).
    public var schemaVersionHash: String
    /// The file's size in bytes.
    public var size: Int64
    /// The file's format: the scheme of the backend that restores it (`sqlite`).
    public var format: String

    public init(storeIdentifier: UUID, token: HistoryToken?, schemaVersionHash: String, size: Int64, format: String) {
        self.storeIdentifier = storeIdentifier
        self.token = token
        self.schemaVersionHash = schemaVersionHash
        self.size = size
        self.format = format
    }
}

/// A backend that can copy its store, while it serves, to a file: a consistent snapshot (every
/// transaction up to one token, none after) taken without holding up writers for more than a
/// moment.
public protocol StorageBackupWriting: StorageBackend {
    /// Writes the snapshot to a new file at `path` (which must not exist), synced to disk, and
    /// says what it holds. On failure no file is left at `path`.
    func writeBackup(to path: String) async throws -> BackupSummary
}

/// A backend factory that can make a store from a backup file (what a ``StorageBackupWriting``
/// backend of its scheme wrote).
public protocol StorageBackupRestoring: StorageBackendFactory {
    /// Checks that the file at `path` is a sound backup (`invalidArgument` naming what is wrong
    /// otherwise) and says what it holds. With `newIdentity`, first gives the file's store a new
    /// UUID. The file may be changed by the check (it is the caller's copy).
    func checkBackup(at path: String, newIdentity: Bool) async throws -> BackupSummary
    /// Moves the checked backup file at `path` to `location`, where a store of this backend is
    /// opened next; nothing may be stored there yet.
    func installBackup(at path: String, to location: StoreLocation) async throws
}
