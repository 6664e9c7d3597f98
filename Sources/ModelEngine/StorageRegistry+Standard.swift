import MemoryStorage
import ModelStorage
import SQLiteStorage

extension StorageRegistry {
    /// The registry with modeld's backends: `sqlite:///path` and `memory:name`.
    public static let standard = StorageRegistry([SQLiteStorageFactory(), MemoryStorageFactory()])
}
