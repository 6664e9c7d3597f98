import ModelCore

/// Reads that are true at a history token, for a backend that cannot read the token in the same
/// snapshot as the data: the token is read before and after, and the read is taken when both
/// agree (no save committed in between). SQLite, memory and PostgreSQL read both in one snapshot.
public enum TokenedReads {
    /// Reads tried before giving up while saves keep landing between the two tokens.
    public static let attempts = 100

    /// Runs `read` between two equal readings of `backend`'s current token.
    public static func between<T: Sendable>(
        _ backend: some StorageBackend, _ read: () async throws -> T
    ) async throws -> (T, HistoryToken?) {
        for _ in 0..<attempts {
            let before = try await backend.currentHistoryToken()
            let result = try await read()
            let after = try await backend.currentHistoryToken()
            if before == after { return (result, after) }
            try Task.checkCancellation()
        }
        throw ModelError(
            .unavailable,
            "the store changed during each of \(attempts) reads, so no result could be tied to one history token: try again"
        )
    }
}

extension StorageBackend {
    public func fetchWithToken(_ descriptor: FetchDescriptor) async throws -> (FetchResult, HistoryToken?) {
        try await TokenedReads.between(self) { try await fetch(descriptor, overlay: nil) }
    }

    public func aggregateWithToken(_ descriptor: AggregateDescriptor) async throws -> ([AggregateRow], HistoryToken?) {
        try await TokenedReads.between(self) { try await aggregate(descriptor, overlay: nil) }
    }
}
