import Foundation
import ModelCore
import ModelStorage

/// A unit of work on a store: pending inserts, updates and deletes that nobody else sees until
/// ``save()``, fetches that include them, ``rollback()``. Core Data's managed object context and
/// SwiftData's `ModelContext`, as an actor; objects are named by ``PersistentIdentifier``s and
/// read as ``ObjectSnapshot``s.
///
/// Operations run one at a time, in the order they were called, even though each awaits the store.
public actor ModelContext {
    /// The container (store and schema) this context works on.
    public nonisolated let container: ModelContainer
    /// Stamped on the history transaction of every save.
    public nonisolated let author: String?
    /// How conflicting saves are resolved.
    public var mergePolicy: MergePolicy
    /// What an insert that collides with a unique constraint does.
    public var uniquenessPolicy: UniquenessPolicy
    /// Whether a save keeps the objects it wrote as known (read) objects of the context, as
    /// every context used again must; false for a context made for one save.
    nonisolated let retainsSavedObjects: Bool

    var pending: PendingChanges
    /// One operation at a time, in arrival order: a context's operations await the store, and an
    /// actor lets other calls in at every `await`; the gate keeps each operation whole.
    private let gate = AsyncSemaphore(permits: 1)

    /// The most times a save retries after resolving conflicts under a merge policy.
    static let maximumSaveAttempts = 5

    init(
        container: ModelContainer, author: String?, mergePolicy: MergePolicy, uniquenessPolicy: UniquenessPolicy,
        retainsSavedObjects: Bool = true
    ) {
        self.container = container
        self.author = author
        self.mergePolicy = mergePolicy
        self.uniquenessPolicy = uniquenessPolicy
        self.retainsSavedObjects = retainsSavedObjects
        self.pending = PendingChanges(schema: container.schema)
    }

    var schema: ResolvedSchema { container.schema }
    var backend: any StorageBackend { container.backend }

    /// Sets how conflicting saves are resolved.
    public func setMergePolicy(_ policy: MergePolicy) { mergePolicy = policy }

    /// Sets what colliding inserts do.
    public func setUniquenessPolicy(_ policy: UniquenessPolicy) { uniquenessPolicy = policy }

    /// Whether the context has unsaved changes.
    public var hasChanges: Bool { pending.hasChanges }

    /// The objects inserted, changed and deleted by the context and not yet saved.
    public var pendingObjects:
        (inserted: [PersistentIdentifier], updated: [PersistentIdentifier], deleted: [PersistentIdentifier])
    {
        let inserted = pending.inserted.filter { !pending.deletedSet.contains($0) }
        let insertedSet = Set(inserted)
        let updated = pending.touchOrder.filter { !insertedSet.contains($0) && !pending.deletedSet.contains($0) }
        return (inserted, updated, pending.deleted.filter { !$0.isTemporary })
    }

    /// Discards every unsaved change, after the operations already under way. What was read
    /// stays known. Returns how many objects had changes (inserted, updated or deleted).
    @discardableResult
    public func rollback() async -> Int {
        await gate.acquireUncancellably()
        defer { gate.release() }
        return discardPending()
    }

    /// Discards every unsaved change now (inside an operation).
    @discardableResult
    func discardPending() -> Int {
        let changed = pendingObjects
        let bases = pending.bases
        pending = PendingChanges(schema: schema)
        pending.bases = bases
        return changed.inserted.count + changed.updated.count + changed.deleted.count
    }

    /// Runs `body` when every earlier operation has finished.
    func serialized<T>(_ body: () async throws -> T) async throws -> T {
        try await gate.acquire()
        defer { gate.release() }
        return try await body()
    }

    // MARK: Reading

    /// Fetches from the store as if the pending changes were saved.
    public func fetch(_ descriptor: FetchDescriptor) async throws -> FetchResult {
        try await serialized {
            let overlay = try await overlay()
            let result = try await backend.fetch(descriptor, overlay: overlay)
            // Only what the store holds becomes a base: an object read through the overlay may
            // show what a delete rule of the pending changes will do to it (a nullified link),
            // and as its base, the save would find nothing left to change.
            if overlay == nil, case .objects(let objects, let prefetched) = result, descriptor.propertiesToFetch == nil
            {
                register(objects + prefetched)
            }
            return result
        }
    }

    /// Counts the objects a fetch would return.
    public func count(_ descriptor: FetchDescriptor) async throws -> Int {
        var counting = descriptor
        counting.resultType = .count
        return try await fetch(counting).count
    }

    /// Computes grouped aggregates as if the pending changes were saved.
    public func aggregate(_ descriptor: AggregateDescriptor) async throws -> [AggregateRow] {
        try await serialized {
            try await backend.aggregate(descriptor, overlay: try await overlay())
        }
    }

    /// The object as this context sees it (pending changes applied); nil if it does not exist
    /// or the context deleted it.
    public func object(for id: PersistentIdentifier) async throws -> ObjectSnapshot? {
        try await objects(for: [id]).first
    }

    /// The objects as this context sees them, in the order asked, leaving out missing ones: as
    /// its fetches see them. Without unsaved changes, the store's objects as they are now; with
    /// them, read through the same overlay as ``fetch(_:)`` (the changes applied, delete rules
    /// included). An object the store no longer has, and the context has not changed, is
    /// forgotten.
    public func objects(for ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        try await serialized {
            for id in ids { try checkIdentifier(id) }
            let found = pending.hasChanges ? try await overlaidObjects(ids) : try await storedObjects(ids)
            for id in Set(ids) where !id.isTemporary && found[id] == nil && !pending.isTouched(id) {
                pending.bases[id] = nil
            }
            return ids.compactMap { found[$0] }
        }
    }

    /// The store's objects now (the context has no unsaved changes), remembered as bases.
    private func storedObjects(_ ids: [PersistentIdentifier]) async throws -> [PersistentIdentifier: ObjectSnapshot] {
        let wanted = Array(Set(ids.filter { !$0.isTemporary }))
        guard !wanted.isEmpty else { return [:] }
        let snapshots = try await read(wanted)
        register(snapshots)
        return Dictionary(snapshots.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The stored objects of `ids`, read here when the store can without waiting: no hop off the
    /// context and back.
    private func read(_ ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        if let read = try backend.snapshotsWithoutWaiting(for: ids) { return read }
        return try await backend.snapshots(for: ids)
    }

    /// The objects as the context's fetches see them: fetched by identifier, an entity at a
    /// time, through the overlay of its unsaved changes.
    private func overlaidObjects(_ ids: [PersistentIdentifier]) async throws -> [PersistentIdentifier: ObjectSnapshot] {
        let overlay = try await overlay()
        var found: [PersistentIdentifier: ObjectSnapshot] = [:]
        for (entity, group) in Dictionary(grouping: Set(ids), by: \.entityName) {
            let group = Array(group)
            for start in stride(from: 0, to: group.count, by: Self.objectsPerFetch) {
                let chunk = group[start..<min(start + Self.objectsPerFetch, group.count)]
                let descriptor = FetchDescriptor(
                    entityName: entity,
                    predicate: .comparison(
                        Comparison(.keyPath(PropertyPath([])), .in, .list(chunk.map { .object($0) }))),
                    includesSubentities: false)
                guard case .objects(let objects, _) = try await backend.fetch(descriptor, overlay: overlay) else {
                    continue
                }
                for object in objects { found[object.id] = object }
            }
        }
        return found
    }

    /// Identifiers asked for in one fetch of ``overlaidObjects(_:)``, within a predicate's list.
    static let objectsPerFetch = 10_000

    /// History transactions after `token`, oldest first.
    public func history(after token: HistoryToken?, limit: Int? = nil) async throws -> [HistoryTransaction] {
        try await container.history(after: token, limit: limit)
    }

    // MARK: Helpers

    /// The pending changes as an overlay for reads (delete rules applied), or nil if none.
    func overlay() async throws -> ChangeSet? {
        guard pending.hasChanges else { return nil }
        var working = pending
        try await propagateDeletes(&working, enforceDeny: false)
        return working.makeChangeSet(author: author, uniquenessPolicy: uniquenessPolicy)
    }

    /// Remembers snapshots read from the store as the bases of objects the context has not changed.
    func register(_ snapshots: [ObjectSnapshot]) {
        for snapshot in snapshots where !snapshot.id.isTemporary && !pending.isTouched(snapshot.id) {
            pending.bases[snapshot.id] = snapshot
        }
    }

    /// Throws unless `id` belongs to this store and names an entity of the schema.
    func checkIdentifier(_ id: PersistentIdentifier) throws(ModelError) {
        guard id.storeIdentifier == container.storeIdentifier else {
            throw ModelError(
                .invalidIdentifier,
                "\(id) belongs to store \(id.storeIdentifier.uuidString.lowercased()), not to this store (\(container.storeIdentifier.uuidString.lowercased()))",
                context: ["uri": id.uriRepresentation])
        }
        _ = try schema.entity(id.entityName) // unknown: says so, naming a rename
        if id.isTemporary, !pending.isKnown(id) {
            throw ModelError(
                .notFound,
                "\(id) is a temporary identifier this context does not hold (another context's, or one its save replaced with a permanent URI): use the permanent URI the save returned",
                context: ["uri": id.uriRepresentation])
        }
    }

    /// Reads the objects the context does not know yet from the store. With `required`, a
    /// missing one is `notFound`.
    func load(_ ids: [PersistentIdentifier], required: Bool) async throws {
        let wanted = Array(Set(ids.filter { !$0.isTemporary && !pending.isKnown($0) }))
        guard !wanted.isEmpty else { return }
        let snapshots = try await read(wanted)
        register(snapshots)
        if required {
            let found = Set(snapshots.map(\.id))
            if let missing = wanted.first(where: { !found.contains($0) && !pending.isKnown($0) }) {
                throw ModelError.objectNotFound(missing)
            }
        }
    }
}
