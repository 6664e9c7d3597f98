import Foundation
import ModelCore
import ModelStorage

/// A store kept in memory: the same facts the SQLite backend keeps (rows per hierarchy with
/// their versions, stored foreign keys, join tables, key sequences that never reuse a key,
/// history), answering every request exactly as docs/storage-semantics.md says. Its data lives
/// as long as the actor; nothing is written anywhere else.
public actor MemoryStore: StorageBackend {
    /// Where the store lives: `memory:<name>`.
    public nonisolated let location: StoreLocation
    /// The store's UUID, chosen when the store is created.
    public nonisolated let storeIdentifier: UUID

    var state: MemoryState
    private var isClosed = false
    /// The staged migration holding the store's writes, if one is under way.
    private var stagedMigration: ObjectIdentifier?
    let clock: @Sendable () -> Timestamp

    /// A new, empty store with an empty schema. `clock` stamps history transactions.
    public init(
        location: StoreLocation = StoreLocation(scheme: "memory", path: ""),
        storeIdentifier: UUID = UUID(),
        clock: @escaping @Sendable () -> Timestamp = { Timestamp(Date()) }
    ) {
        self.location = location
        self.storeIdentifier = storeIdentifier
        self.clock = clock
        self.state = MemoryState(schema: Self.emptySchema)
    }

    /// A store holding `state` (a staged migration's copy of another's).
    init(copying other: MemoryStore, state: MemoryState) {
        self.location = other.location
        self.storeIdentifier = other.storeIdentifier
        self.clock = other.clock
        self.state = state
    }

    /// The schema of a new store.
    // `try!`: an empty schema has nothing a validator could reject.
    private static let emptySchema: ResolvedSchema = try! ResolvedSchema(Schema())

    /// The store's current schema (empty for a new store).
    public func schema() throws -> ResolvedSchema {
        try checkOpen()
        return state.schema
    }

    /// Sets the schema: allowed while the store holds no objects, or when the version hash is
    /// the same; otherwise `schemaMismatch`, listing the differences.
    public func apply(schema: Schema) throws {
        try checkWritable()
        let resolved = try ResolvedSchema.resolved(schema)
        if resolved.versionHash == state.schema.versionHash {
            state.schema = resolved
            return
        }
        guard state.isEmpty else {
            let differences = schema.differences(from: state.schema.schema)
            throw ModelError(
                .schemaMismatch,
                "the store \(location) holds objects saved with another schema (version \(state.schema.versionHash.prefix(12))), which differs from the one requested (version \(resolved.versionHash.prefix(12))):\n"
                    + differences.map { "  \($0)" }.joined(separator: "\n")
                    + "\nopen the store with its own schema, or migrate it",
                context: [
                    "store": location.url, "storeVersion": state.schema.versionHash,
                    "requestedVersion": resolved.versionHash,
                ])
        }
        var fresh = MemoryState(schema: resolved)
        fresh.sequences = state.sequences
        fresh.history = state.history
        fresh.lastToken = state.lastToken
        state = fresh
    }

    /// Fetches as if `overlay` had been saved.
    public func fetch(_ descriptor: FetchDescriptor, overlay: ChangeSet?) throws -> FetchResult {
        try checkOpen()
        let validated = try descriptor.validated(in: state.schema, storeIdentifier: storeIdentifier)
        return try reader(overlay: overlay).fetch(validated)
    }

    /// Grouped aggregates as if `overlay` had been saved.
    public func aggregate(_ descriptor: AggregateDescriptor, overlay: ChangeSet?) throws -> [AggregateRow] {
        try checkOpen()
        let validated = try descriptor.validated(in: state.schema, storeIdentifier: storeIdentifier)
        return try reader(overlay: overlay).aggregate(validated)
    }

    /// Snapshots of the objects with these identifiers, in the order given; objects that don't
    /// exist are left out.
    public func snapshots(for ids: [PersistentIdentifier]) throws -> [ObjectSnapshot] {
        try checkOpen()
        let reader = StoreReader(state: state, storeIdentifier: storeIdentifier)
        var snapshots: [ObjectSnapshot] = []
        _ = try ObjectLookup.keysByRoot(ids, schema: state.schema, storeIdentifier: storeIdentifier)
        for id in ids {
            if let ref = state.object(for: id), let row = state.row(ref) { snapshots.append(reader.snapshot(ref, row)) }
        }
        return snapshots
    }

    /// Saves atomically: ModelStorage's save algorithm checks everything and computes the writes
    /// first; then they are applied, which cannot fail, and one history transaction recorded.
    public func save(_ changes: ChangeSet) throws -> SaveResult {
        try checkWritable()
        guard !changes.isEmpty else { return SaveResult() }
        try ChangeSetPlan.checkIdentifiers(changes, schema: state.schema, storeIdentifier: storeIdentifier)
        let reads = MemoryReads(state: state, storeIdentifier: storeIdentifier)
        let conflicts = try ExpectedVersions.conflicts(in: changes, reads: reads)
        guard conflicts.isEmpty else {
            let reader = StoreReader(state: state, storeIdentifier: storeIdentifier)
            throw SaveConflicts(
                conflicts.map { conflict in
                    SaveConflicts.Conflict(
                        id: conflict.id, expectedVersion: conflict.expected,
                        current: conflict.ref.flatMap { ref in state.row(ref).map { reader.snapshot(ref, $0) } })
                })
        }
        let plan = try ChangeSetPlan(changes, reads: reads, isOverlay: false)
        var resolver = UniquenessResolver(reads: reads, plan: plan)
        let writes = try SaveWrites(plan, merges: try resolver.resolve(policy: changes.uniquenessPolicy), reads: reads)
        guard !writes.history.isEmpty else { return SaveResult() }
        state.apply(writes)
        state.lastToken += 1
        let token = HistoryToken(state.lastToken)
        state.history.append(
            HistoryTransaction(
                token: token, timestamp: clock(), author: changes.author, changes: writes.history,
                user: changes.user))
        var result = writes.result
        result.token = token
        return result
    }

    /// Closes the store; later calls fail with `closed`.
    public func close() {
        isClosed = true
    }

    /// Refuses a write while a staged migration holds the store (or once it is closed).
    func checkWritable() throws(ModelError) {
        try checkOpen()
        if stagedMigration != nil { throw ModelError.migrating(location) }
    }

    /// Begins a staged migration (``StagedMigration``): it works on a copy of the state, which
    /// replaces the store's at commit; meanwhile the store's reads see the state as it was and
    /// its writes are refused.
    public func beginStagedMigration(author: String?) throws -> any StagedMigration {
        try checkWritable()
        let copy = MemoryStore(copying: self, state: state)
        let migration = MemoryStagedMigration(store: self, copy: copy, author: author)
        stagedMigration = ObjectIdentifier(migration)
        return migration
    }

    /// Ends the staged migration `migration`: its state replaces the store's when committed
    /// (`state` given), or is dropped.
    func endStagedMigration(_ migration: ObjectIdentifier, state migrated: MemoryState?) throws {
        guard stagedMigration == migration else {
            throw ModelError(.invalidArgument, "this staged migration of \(location) is over")
        }
        stagedMigration = nil
        if let migrated {
            try checkOpen()
            state = migrated
        }
    }

    func checkOpen() throws(ModelError) {
        guard !isClosed else {
            throw ModelError(
                .closed, "the store \(location) is closed; open it again to use it", context: ["store": location.url])
        }
    }

    /// A reader of the stored state, or of a copy with `overlay` applied.
    private func reader(overlay: ChangeSet?) throws -> StoreReader {
        guard let overlay, !overlay.isEmpty else { return StoreReader(state: state, storeIdentifier: storeIdentifier) }
        try ChangeSetPlan.checkIdentifiers(overlay, schema: state.schema, storeIdentifier: storeIdentifier)
        let reads = MemoryReads(state: state, storeIdentifier: storeIdentifier)
        let plan = try ChangeSetPlan(overlay, reads: reads, isOverlay: true)
        let writes = try SaveWrites(plan, merges: [:], reads: reads, recordsHistory: false)
        var copy = state
        copy.apply(writes)
        var temporaryRefs: [PersistentIdentifier: ObjectRef] = [:]
        for (index, insert) in plan.inserts.enumerated() { temporaryRefs[insert.id] = writes.insertRefs[index] }
        return StoreReader(state: copy, storeIdentifier: storeIdentifier, temporaryRefs: temporaryRefs)
    }
}
