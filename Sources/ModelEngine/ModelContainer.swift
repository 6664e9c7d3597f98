import Foundation
import ModelCore
import ModelStorage

/// A store opened with its schema: what contexts work on. Core Data's persistent container,
/// SwiftData's `ModelContainer`, for use in-process (the daemon builds its sessions on it too).
public final class ModelContainer: Sendable {
    /// The store's backend.
    public let backend: any StorageBackend
    /// The store's schema.
    public let schema: ResolvedSchema

    /// The store's UUID, the same in every process that opens it.
    public var storeIdentifier: UUID { backend.storeIdentifier }
    /// The backend, when it cannot keep some values: each value a context is given is checked
    /// with it (``convert(_:for:)``).
    let valueChecker: (any StorageValueChecking)?

    private init(backend: any StorageBackend, schema: ResolvedSchema) {
        self.backend = backend
        self.schema = schema
        self.valueChecker = backend as? any StorageValueChecking
    }

    /// Opens the store at `url` (`sqlite:///abs/path.sqlite`, `memory:name`). With a schema, a
    /// new store takes it, and a store of another schema migrates to it as SwiftData's container
    /// does: what can be inferred, and nothing that deletes stored values (``migrationOptions``
    /// says otherwise); a migration it cannot make throws `schemaMismatch` naming why. Without
    /// one, the store's own schema is used.
    public static func open(
        url: String, schema: Schema? = nil, registry: StorageRegistry,
        migrationOptions: MigrationOptions = MigrationOptions()
    ) async throws -> ModelContainer {
        let backend: any StorageBackend
        do {
            backend = try await registry.open(url: url, applying: schema)
        } catch let error as ModelError where error.code == .schemaMismatch && schema != nil {
            // The store has another schema: open it as it is, then migrate.
            backend = try await registry.open(url: url, applying: nil)
            do {
                _ = try await backend.migrate(to: schema!, options: migrationOptions) // `schema != nil` above
            } catch {
                await backend.close()
                throw error
            }
        }
        do {
            return try await open(backend: backend)
        } catch {
            await backend.close()
            throw error
        }
    }

    /// Wraps an open backend, applying `schema` as ``open(url:schema:registry:)`` does.
    public static func open(backend: any StorageBackend, schema: Schema? = nil) async throws -> ModelContainer {
        if let schema {
            try await backend.apply(schema: schema)
        }
        return ModelContainer(backend: backend, schema: try await backend.schema())
    }

    /// A new context (unit of work) on this store. A context made for one save and then dropped
    /// passes `retainsSavedObjects: false`: its saves then do not keep what they wrote as the
    /// objects it knows (work that only a context used again needs).
    public func makeContext(
        author: String? = nil, mergePolicy: MergePolicy = .error,
        uniquenessPolicy: UniquenessPolicy = .error, retainsSavedObjects: Bool = true
    ) -> ModelContext {
        ModelContext(
            container: self, author: author, mergePolicy: mergePolicy, uniquenessPolicy: uniquenessPolicy,
            retainsSavedObjects: retainsSavedObjects)
    }

    /// History transactions after `token` (from the start when nil), oldest first.
    /// Throws `historyTokenExpired` when transactions right after `token` were deleted: history
    /// is one run of tokens, so a first transaction past `token + 1` (or none, with later ones
    /// saved) means some were deleted, and reading on would leave a silent gap.
    public func history(after token: HistoryToken?, limit: Int? = nil) async throws -> [HistoryTransaction] {
        var page = try await backend.history(after: token, limit: limit)
        guard let token, limit != 0 else { return page }
        if page.isEmpty {
            let latest = try await backend.currentHistoryToken()
            guard let latest, latest > token else {
                // A token past the latest names no transaction of this store's: a follower would
                // skip the transactions up to it when they came.
                guard token > latest ?? HistoryToken(0) else { return page }
                throw ModelError(
                    .historyTokenExpired,
                    "history token \(token.rawValue) is past the store's latest (\(latest.map { String($0.rawValue) } ?? "none yet")), so it is not of this store's history (was the store restored from an older backup, or made again under its name?): fetch what you need again, then read history after the store's current token",
                    context: ["token": String(token.rawValue), "latest": String(latest?.rawValue ?? 0)])
            }
            // Saved since the read, or deleted: read again, now that a later token is known to exist.
            page = try await backend.history(after: token, limit: limit)
        }
        guard let first = page.first?.token, first.rawValue == token.rawValue + 1 else {
            let kept = page.first.map { "it is kept from token \($0.token.rawValue) on" } ?? "none after it is kept"
            throw ModelError(
                .historyTokenExpired,
                "history after token \(token.rawValue) was deleted (\(kept)): fetch what you need again, then read history after the store's current token",
                context: ["token": String(token.rawValue)])
        }
        return page
    }

    /// The token of the latest saved transaction.
    public func currentHistoryToken() async throws -> HistoryToken? {
        try await backend.currentHistoryToken()
    }

    /// Deletes the history transactions up to and including `token`, oldest first; refuses a
    /// token past the latest (a mistake that would otherwise delete nothing, silently). Returns
    /// `token` when history through it was kept until now, nil when it was all deleted already.
    @discardableResult
    public func deleteHistory(through token: HistoryToken) async throws -> HistoryToken? {
        guard token.rawValue > 0 else {
            throw ModelError(.invalidArgument, "history tokens start at 1; \(token.rawValue) names no transaction")
        }
        let latest = try await backend.currentHistoryToken()
        guard token <= latest ?? HistoryToken(0) else {
            throw ModelError(
                .invalidArgument,
                "history token \(token.rawValue) is past the store's latest (\(latest.map { String($0.rawValue) } ?? "none yet")): delete through a token the store has written",
                context: ["token": String(token.rawValue)])
        }
        guard let oldest = try await oldestHistoryToken(), oldest <= token else { return nil }
        try await backend.deleteHistory(before: HistoryToken(token.rawValue + 1))
        return token
    }

    /// The token of the oldest history transaction kept; nil when none is. Asked of the backend
    /// when it can say without reading the transaction.
    public func oldestHistoryToken() async throws -> HistoryToken? {
        if let extent = backend as? any StorageHistoryExtent { return try await extent.oldestHistoryToken() }
        return try await backend.history(after: nil, limit: 1).first?.token
    }

    /// Deletes the history transactions saved before `date`, from the oldest up to the first
    /// saved at or after it; returns the newest token deleted (nil when none was).
    @discardableResult
    public func deleteHistory(savedBefore date: Timestamp) async throws -> HistoryToken? {
        let newest = try await newestHistoryToken(savedBefore: date)
        if let newest { try await backend.deleteHistory(before: HistoryToken(newest.rawValue + 1)) }
        return newest
    }

    /// The token of the last of the oldest transactions saved before `date` (the run of them up
    /// to the first saved at or after it); nil when the oldest kept was saved at or after it.
    public func newestHistoryToken(savedBefore date: Timestamp) async throws -> HistoryToken? {
        var newest: HistoryToken?
        var after: HistoryToken?
        while true {
            let page = try await backend.history(after: after, limit: 1_000)
            for transaction in page {
                guard transaction.timestamp < date else { return newest }
                newest = transaction.token
            }
            guard page.count == 1_000, let last = page.last else { return newest }
            after = last.token
        }
    }

    /// Closes the store.
    public func close() async {
        await backend.close()
    }

    /// Closes the store whose data is deleted next (see `StorageBackend.closeForRemoval()`).
    public func closeForRemoval() async {
        await backend.closeForRemoval()
    }
}
