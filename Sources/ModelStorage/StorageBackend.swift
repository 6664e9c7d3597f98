import Foundation
import ModelCore

/// A store's storage engine, modelled on SwiftData's `DataStore`. The engine above owns the
/// semantics that must not differ between backends (delete rules, validation, merge policies);
/// a backend owns how data is kept and how predicates, sorts and aggregates are pushed down.
///
/// Every method that takes a descriptor validates it first (``FetchDescriptor/validated(in:storeIdentifier:)``)
/// and throws ``ModelError`` for bad input. Identifiers of another store are `invalidIdentifier`.
public protocol StorageBackend: Sendable {
    /// Where the store lives (`sqlite:///abs/path.sqlite`, `memory:name`).
    var location: StoreLocation { get }

    /// The store's UUID: kept inside the store, the same in every process that opens it.
    var storeIdentifier: UUID { get }

    /// The store's current schema (empty for a new store).
    func schema() async throws -> ResolvedSchema

    /// Sets the store's schema. Allowed when the store holds no objects, or when the schema has
    /// the same version hash; otherwise `schemaMismatch` with the differences spelled out.
    func apply(schema: Schema) async throws

    /// Migrates the store to `schema` by inference (``MigrationPlanner``): in one write
    /// transaction, plans against the data, then — unless `options.dryRun` or something is
    /// refused — changes the storage and the schema, and records the change in history (a
    /// transaction with ``HistoryTransaction/schemaChange``, by `options.author`). All of it or
    /// nothing. Returns the plan; a refused plan throws ``MigrationPlan/refusalError`` unless
    /// it is a dry run. The same schema version: an empty plan, nothing written.
    func migrate(to schema: Schema, options: MigrationOptions) async throws -> MigrationPlan

    /// Begins a staged migration (``StagedMigration``): one write transaction that the caller
    /// steps through schema versions, reading and saving objects between the steps, and then
    /// commits or rolls back. Until it ends, the store's other writes (saves, migrations, schema
    /// changes, history deletion) are refused with `unavailable`; its reads see the store as it
    /// was before the migration began. `author` stamps the steps' history.
    func beginStagedMigration(author: String?) async throws -> any StagedMigration

    /// Fetches as if `overlay` (a context's pending changes) had been saved: inserted objects
    /// match predicates and come back with their temporary identifiers, deleted ones don't come
    /// back, updated values are the ones matched and sorted. Nothing is written.
    func fetch(_ descriptor: FetchDescriptor, overlay: ChangeSet?) async throws -> FetchResult

    /// Fetches objects without pending changes, handing them to `body` batch by batch (at most
    /// `batchSize` each) as they are read: the results first, then any prefetched objects
    /// (`prefetched` true). A backend that can read as it goes holds only a batch, however many
    /// objects match. Returns how many results there were.
    func fetchObjects(
        _ descriptor: FetchDescriptor, batchSize: Int,
        _ body: (_ batch: [ObjectSnapshot], _ prefetched: Bool) async throws -> Void
    ) async throws -> Int

    /// Grouped aggregates, computed by the store, as if `overlay` had been saved.
    func aggregate(_ descriptor: AggregateDescriptor, overlay: ChangeSet?) async throws -> [AggregateRow]

    /// ``fetch(_:overlay:)`` without pending changes, and the token of the latest transaction
    /// read in the same snapshot of the store: the result is true at that token (nil: nothing was
    /// ever saved). What a watch reports (``TokenedReads``).
    func fetchWithToken(_ descriptor: FetchDescriptor) async throws -> (FetchResult, HistoryToken?)

    /// ``aggregate(_:overlay:)`` without pending changes, with the token it is true at.
    func aggregateWithToken(_ descriptor: AggregateDescriptor) async throws -> ([AggregateRow], HistoryToken?)

    /// The objects with these identifiers, with all their values; identifiers of objects that
    /// don't exist are left out. The order follows `ids`.
    func snapshots(for ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot]

    /// ``snapshots(for:)`` on the calling thread, at once, when the backend can read without
    /// waiting for anything (a connection free, the schema known); nil, having read nothing,
    /// when it would wait. A server answers a point read where the request was read with it,
    /// and otherwise calls ``snapshots(for:)``. The default is always nil.
    func snapshotsWithoutWaiting(for ids: [PersistentIdentifier]) throws -> [ObjectSnapshot]?

    /// ``fetch(_:)`` on the calling thread, at once, when the backend can read without waiting
    /// and the read is short; nil when it would wait, or when the read ran past a short budget
    /// (what it read is then dropped: it only read, and the caller fetches as usual). The
    /// default is always nil.
    func fetchWithoutWaiting(_ descriptor: FetchDescriptor) throws -> FetchResult?

    /// ``fetchWithoutWaiting(_:)`` of an objects fetch without prefetching, its objects handed
    /// to `sink` as they are read (as rows, when the backend reads them so, rather than as
    /// snapshots). Returns how many objects there were; nil when it would wait, ran past its
    /// budget, or `sink` took no more, and what `sink` took is then to be dropped. The default
    /// hands over ``fetchWithoutWaiting(_:)``'s snapshots.
    func fetchWithoutWaiting<Sink: ObjectRowSink>(_ descriptor: FetchDescriptor, into sink: inout Sink) throws -> Int?

    /// ``snapshotsWithoutWaiting(for:)``, the objects handed to `sink` in the order of `ids`;
    /// false when it would wait or `sink` took no more (what `sink` took is then to be dropped).
    /// The default hands over ``snapshotsWithoutWaiting(for:)``'s snapshots.
    func objectsWithoutWaiting<Sink: ObjectRowSink>(for ids: [PersistentIdentifier], into sink: inout Sink) throws
        -> Bool

    /// Saves atomically and durably, writing one history transaction. Checks expected versions
    /// (throwing ``SaveConflicts`` and writing nothing if any differ) and unique constraints
    /// (`uniqueConstraint`, or an upsert when the change set asks for one).
    func save(_ changes: ChangeSet) async throws -> SaveResult

    /// Saves `runs` as ``save(_:)`` would save their objects as inserts, if the backend has a
    /// way of its own to write them straight from the runs; nil, having done nothing, if not (by
    /// default), and the caller saves them as inserts. The runs come complete: a column per
    /// attribute of a concrete entity, values of their types, required ones set, and no
    /// relationship needed. A backend may still decline a save it would have to check further
    /// (unique constraints). The objects come back as ``SaveResult/insertedRuns``.
    nonisolated(nonsending) func saveInsertRuns(_ runs: [InsertRun], author: String?, user: String?) async throws
        -> SaveResult?

    /// ``saveInsertRuns(_:author:user:)`` for a caller without a task to suspend (a framed call
    /// answered from its event loop): the save is queued as that one queues it, and `whenSaved`
    /// is called with its result, on the thread that committed it. Returns what gives the save
    /// up, as cancelling ``saveInsertRuns(_:author:user:)``'s task does; nil, having done
    /// nothing, where ``saveInsertRuns(_:author:user:)`` would return nil, or would first have to
    /// wait for something (a schema not read yet), or the backend has no such way (by default):
    /// the caller then saves the runs with ``saveInsertRuns(_:author:user:)``. Throws what that
    /// one throws before it saves anything.
    func submitInsertRuns(
        _ runs: [InsertRun], author: String?, user: String?,
        whenSaved: @escaping @Sendable (Result<SaveResult, any Error>) -> Void
    ) throws -> (@Sendable () -> Void)?

    /// History transactions after `token` (from the start when nil), oldest first.
    func history(after token: HistoryToken?, limit: Int?) async throws -> [HistoryTransaction]

    /// The token of the latest transaction, or nil if nothing was ever saved.
    func currentHistoryToken() async throws -> HistoryToken?

    /// Deletes the history transactions before `token`.
    func deleteHistory(before token: HistoryToken) async throws

    /// Closes the store; later calls fail with `closed`.
    func close() async

    /// Closes the store because its data is deleted next: a backend may skip what only tidies
    /// its files (SQLite's checkpoint at close). By default, ``close()``.
    func closeForRemoval() async

    /// The schema the store holds now, read from it (another process may have migrated it since
    /// this one read it), and used from now on. By default ``schema()``.
    func reloadSchema() async throws -> ResolvedSchema
}

extension StorageBackend {
    public func closeForRemoval() async {
        await close()
    }

    public func reloadSchema() async throws -> ResolvedSchema {
        try await schema()
    }

    public nonisolated(nonsending) func saveInsertRuns(_ runs: [InsertRun], author: String?, user: String?) async throws
        -> SaveResult?
    {
        nil
    }

    public func submitInsertRuns(
        _ runs: [InsertRun], author: String?, user: String?,
        whenSaved: @escaping @Sendable (Result<SaveResult, any Error>) -> Void
    ) throws -> (@Sendable () -> Void)? {
        nil
    }

    public func snapshotsWithoutWaiting(for ids: [PersistentIdentifier]) throws -> [ObjectSnapshot]? {
        nil
    }

    public func fetchWithoutWaiting(_ descriptor: FetchDescriptor) throws -> FetchResult? {
        nil
    }

    public func fetchWithoutWaiting<Sink: ObjectRowSink>(_ descriptor: FetchDescriptor, into sink: inout Sink) throws
        -> Int?
    {
        guard let objects = try fetchWithoutWaiting(descriptor)?.objects else { return nil }
        return sink.add(objects) ? objects.count : nil
    }

    public func objectsWithoutWaiting<Sink: ObjectRowSink>(for ids: [PersistentIdentifier], into sink: inout Sink)
        throws -> Bool
    {
        guard let objects = try snapshotsWithoutWaiting(for: ids) else { return false }
        return sink.add(objects)
    }

    /// Fetches without pending changes.
    public func fetch(_ descriptor: FetchDescriptor) async throws -> FetchResult {
        try await fetch(descriptor, overlay: nil)
    }

    /// Fetches everything, then hands it over in batches: for backends that hold their objects
    /// in memory anyway.
    public func fetchObjects(
        _ descriptor: FetchDescriptor, batchSize: Int,
        _ body: (_ batch: [ObjectSnapshot], _ prefetched: Bool) async throws -> Void
    ) async throws -> Int {
        var descriptor = descriptor
        descriptor.resultType = .objects
        return try await Self.inBatches(try await fetch(descriptor), batchSize: batchSize, body)
    }

    /// Hands a fetch's objects to `body` in batches, results first.
    public static func inBatches(
        _ result: FetchResult, batchSize: Int,
        _ body: (_ batch: [ObjectSnapshot], _ prefetched: Bool) async throws -> Void
    ) async throws -> Int {
        guard case .objects(let objects, let prefetched) = result else {
            throw ModelError(.invalidArgument, "batches of objects need a fetch whose result type is objects")
        }
        let size = max(batchSize, 1)
        for start in stride(from: 0, to: objects.count, by: size) {
            try await body(Array(objects[start..<min(start + size, objects.count)]), false)
        }
        for start in stride(from: 0, to: prefetched.count, by: size) {
            try await body(Array(prefetched[start..<min(start + size, prefetched.count)]), true)
        }
        return objects.count
    }

    /// Aggregates without pending changes.
    public func aggregate(_ descriptor: AggregateDescriptor) async throws -> [AggregateRow] {
        try await aggregate(descriptor, overlay: nil)
    }
}
