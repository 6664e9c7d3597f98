import ModelCore

/// A backend whose stores can be kept under a size: the daemon's `--max-store-size` asks every
/// store it opens that is one (a backend that is not ignores the setting).
public protocol StorageSizeLimiting: StorageBackend {
    /// Limits how large the store may grow, in bytes (nil: no limit). A save beyond fails with
    /// `resourceExhausted`, as on a full disk; reads go on.
    func setMaximumSize(_ bytes: Int64?) async throws
}

/// A backend whose new stores keep a few labels of the daemon's (a store's owner) in their own
/// data, written in the transaction that makes the store: durable with it, with no file beside
/// it to write and sync. A label is set when the store is made (or installed from a backup); the
/// daemon reads it back when it opens the store (``LabelledStorage``).
public protocol StorageLabelling: StorageBackendFactory {
    /// Makes the store at `location` (which holds no data yet, or a backup just installed there),
    /// applying `schema` when given, with `labels` kept in it, replacing labels of the same names.
    func create(_ location: StoreLocation, applying schema: Schema?, labels: [String: String]) async throws
        -> any StorageBackend
}

/// A store of a ``StorageLabelling`` backend: the labels it was made with (none when made
/// without).
public protocol LabelledStorage: StorageBackend {
    var labels: [String: String] { get }
}

/// A backend whose stores cannot keep every value a client may send (PostgreSQL's text cannot
/// hold U+0000): a context refuses such a value when it is given one, with what the save would
/// answer, rather than keep it staged, where every read of the context would fail on it.
public protocol StorageValueChecking: StorageBackend {
    /// Throws `invalidArgument`, saying why, when the store cannot keep `value` as the attribute
    /// `attribute` of `entity`.
    func checkStorable(_ value: Value, entity: String, attribute: String) throws(ModelError)
}
