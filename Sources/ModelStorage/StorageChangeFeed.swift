import ModelCore

/// A backend whose stores other processes save to, and which hears their saves as they commit
/// (PostgreSQL's LISTEN/NOTIFY): a daemon wakes its history followers with it at once, rather
/// than at their next poll.
public protocol StorageChangeFeed: StorageBackend {
    /// Calls `body` with the token of every save of the store, through any process, as it
    /// commits, until `body` returns false or the task is cancelled; `listening` once saves are
    /// heard. Throws when the store's server cannot be reached (the caller tries again).
    func followChanges(
        listening: @escaping @Sendable () -> Void, _ body: @escaping @Sendable (HistoryToken) async throws -> Bool
    ) async throws
}
