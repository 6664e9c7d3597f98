/// A backend whose stores can be kept under a size: the daemon's `--max-store-size` asks every
/// store it opens that is one (a backend that is not ignores the setting).
public protocol StorageSizeLimiting: StorageBackend {
    /// Limits how large the store may grow, in bytes (nil: no limit). A save beyond fails with
    /// `resourceExhausted`, as on a full disk; reads go on.
    func setMaximumSize(_ bytes: Int64?) async throws
}
