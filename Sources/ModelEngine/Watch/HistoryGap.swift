import ModelCore
import ModelStorage

/// History that was deleted before a hub read it (by a retention setting, `DeleteHistory`, or
/// another process sharing the store): what those transactions changed is not known, so every
/// watch looks again; and one of them may have changed the store's schema (another daemon's
/// migration), which ends the watches as a migration read from history does.
public enum HistoryGap {
    /// What a hub asks of its store about a gap.
    public struct Store: Sendable {
        /// The token of the store's latest transaction.
        let currentToken: @Sendable () async throws -> HistoryToken?
        /// The schema versions served and stored, when they differ: read from the store's data,
        /// not from what this process knows of it.
        let schemaChange: @Sendable () async throws -> (from: String, to: String)?

        public init(
            currentToken: @escaping @Sendable () async throws -> HistoryToken?,
            schemaChange: @escaping @Sendable () async throws -> (from: String, to: String)?
        ) {
            self.currentToken = currentToken
            self.schemaChange = schemaChange
        }

        init(_ backend: any StorageBackend) {
            self.init(
                currentToken: { try await backend.currentHistoryToken() },
                schemaChange: {
                    let served = try await backend.schema().versionHash
                    let stored = try await backend.reloadSchema().versionHash
                    return served == stored ? nil : (served, stored)
                })
        }
    }

    /// The newest token history skips after `after`, or nil when `page` (history after it, read
    /// after `current`, the store's token) goes on from it: transactions up to `current` were
    /// saved before the page was read, so a page without them means they were deleted.
    static func find(after: HistoryToken?, page: [HistoryTransaction], current: HistoryToken?) -> HistoryToken? {
        let next = (after?.rawValue ?? 0) + 1
        if let first = page.first { return first.token.rawValue == next ? nil : first.token }
        guard let current, current.rawValue >= next else { return nil }
        return current
    }
}
