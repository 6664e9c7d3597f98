import ModelCore

/// What a save did, as a context needs to know it.
struct SaveReport: Sendable {
    var remapped: [PersistentIdentifier: PersistentIdentifier] = [:]
    var token: HistoryToken?
    /// Every object the save deleted: those the context deleted, and those delete rules did.
    var deleted: [PersistentIdentifier] = []
    /// Existing objects that inserts were merged into (an upsert on a unique constraint).
    var merged: [PersistentIdentifier] = []
    /// The versions of the objects the save updated, after it.
    var versions: [PersistentIdentifier: Int64] = [:]

    init(
        remapped: [PersistentIdentifier: PersistentIdentifier], token: HistoryToken?, transaction: HistoryTransaction?,
        versions: [PersistentIdentifier: Int64]
    ) {
        self.remapped = remapped
        self.token = token
        self.versions = versions
        deleted = transaction?.changes.filter { $0.kind == .delete }.map(\.id) ?? []
        // An insert merged into an existing object is that object's update in history; two
        // inserts merged into one new object map to one identifier.
        if !remapped.isEmpty {
            let updated = Set(transaction?.changes.lazy.filter { $0.kind == .update }.map(\.id) ?? [])
            var seen = Set<PersistentIdentifier>(), repeated = Set<PersistentIdentifier>()
            for id in remapped.values where !seen.insert(id).inserted { repeated.insert(id) }
            merged = Array(Set(remapped.values.filter { updated.contains($0) }).union(repeated))
        }
    }
}

/// What a context's unit of work is opened with; a change to any of them while nothing was sent
/// opens a new one.
struct ContextSettings: Hashable, Sendable {
    var author: String?
    var mergePolicy: MergePolicy
    var uniquenessPolicy: UniquenessPolicy
}

/// A context's unit of work: a session of the daemon, or an engine context in-process. The
/// context sends it changes, saves through it, and reads the store through it (seeing its own
/// unsaved changes).
protocol ContextConnection: Sendable {
    func stage(_ edits: [ObjectEdit]) async throws
    /// Makes `edits` and saves everything, in one call, all or none.
    func save(applying edits: [ObjectEdit]) async throws -> SaveReport
    func rollback() async throws
    func fetch(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult
    func count(_ descriptor: ModelCore.FetchDescriptor) async throws -> Int
    func aggregate(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow]
    func close() async
}

/// A container's store: a daemon's store over its socket, or a store opened in-process.
protocol StoreConnection: Sendable {
    var storeIdentifier: UUID { get }
    func openContext(_ settings: ContextSettings) async throws -> any ContextConnection
    /// A fetch of what is saved, without any context's changes.
    func fetchSaved(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult
    func aggregateSaved(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow]
    func history(after token: HistoryToken?, author: String?, limit: Int?) async throws -> [HistoryTransaction]
    func currentHistoryToken() async throws -> HistoryToken?
    /// Sets `attributes` on every object of `entity` matching `predicate`, in a save of its own;
    /// returns how many matched.
    /// Deletes the history transactions up to and including `token`.
    func deleteHistory(through token: HistoryToken) async throws
    /// Calls `body` with each history transaction after `token` (of `author` only, when given),
    /// oldest first, then with each one saved from now on, until the task is cancelled; `body`
    /// is awaited before the next transaction is read.
    func followHistory(
        after token: HistoryToken?, author: String?,
        _ body: @Sendable @escaping (HistoryTransaction) async throws -> Void
    ) async throws
    func batchUpdate(
        _ entity: String, where predicate: ModelCore.Predicate?, set attributes: [String: Value], author: String?
    ) async throws -> Int
    /// Watches `query` (a live query): `body` gets the first result, then each result a save
    /// changed, until the task is cancelled or the store ends the watch.
    func watch(_ query: WatchedQuery, _ body: @Sendable @escaping (WatchUpdate) async throws -> Void) async throws
    func close() async
}
