import MemoryStorage
import ModelStorage
import SQLiteStorage

extension StorageRegistry {
    /// The registry with modeld's own backends: `sqlite:///path` and `memory:name`. What an app
    /// or a test that opens stores in-process uses.
    public static let standard = StorageRegistry([SQLiteStorageFactory(), MemoryStorageFactory()])

    /// The daemon's: the standard backends, with dropped SQLite stores' files emptied for the next
    /// stores rather than deleted.
    public static let daemon = StorageRegistry([SQLiteStorageFactory(recyclesFiles: true), MemoryStorageFactory()])
}
