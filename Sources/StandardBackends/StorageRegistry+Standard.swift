import MemoryStorage
import ModelStorage
import PostgresStorage
import SQLiteStorage

extension StorageRegistry {
    /// The registry with modeld's own backends: `sqlite:///path`, `memory:name` and
    /// `postgres://…` (or `postgresql://…`). What an app or a test that opens stores in-process uses.
    public static let standard = StorageRegistry(
        [
            SQLiteStorageFactory(), MemoryStorageFactory(), PostgresStorageFactory(),
            PostgresStorageFactory(scheme: "postgresql"),
        ])

    /// The daemon's: the standard backends, with dropped SQLite stores' files emptied for the next
    /// stores rather than deleted.
    public static let daemon = StorageRegistry(
        [
            SQLiteStorageFactory(recyclesFiles: true), MemoryStorageFactory(), PostgresStorageFactory(),
            PostgresStorageFactory(scheme: "postgresql"),
        ])
}
