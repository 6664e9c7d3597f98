import Foundation
import ModelCore
import ModelStorage
import Synchronization

extension SQLiteStore {
    /// Begins a staged migration (``StagedMigration``): the writer opens a `BEGIN IMMEDIATE`
    /// transaction and is leased to the migration until it commits or rolls back, so the store's
    /// other writes are refused (`unavailable`) meanwhile; readers see the last commit. Another
    /// process's writes wait for SQLite's lock as for any long write. A crash before the commit
    /// leaves the file as it was.
    public func beginStagedMigration(author: String?) async throws -> any StagedMigration {
        _ = try await layout()
        let lease = ConnectionQueue.newLease()
        let stored = try await writer.run(lease: .acquire(lease, refusal: .migrating(location))) { connection in
            try connection.beginWrite()
            do {
                return try StoreMetadata.schema(connection)
            } catch {
                _ = try? connection.run("ROLLBACK")
                throw error
            }
        }
        return SQLiteStagedMigration(store: self, lease: lease, layout: SQLiteLayout(stored), author: author)
    }
}

/// A staged migration of an SQLite store: every call a job of the writer it leases, inside the
/// transaction ``SQLiteStore/beginStagedMigration(author:)`` opened, each in a savepoint (a failed
/// save or step is undone alone). Reads go through the writer too, so they see the migration's
/// own writes.
final class SQLiteStagedMigration: StagedMigration {
    private let store: SQLiteStore
    private let lease: UInt64
    private let author: String?
    /// The current stage's layout; nil once the migration is over.
    private let current: Mutex<SQLiteLayout?>

    init(store: SQLiteStore, lease: UInt64, layout: SQLiteLayout, author: String?) {
        self.store = store
        self.lease = lease
        self.author = author
        self.current = Mutex(layout)
    }

    var location: StoreLocation { store.location }
    var storeIdentifier: UUID { store.storeIdentifier }

    private func layout() throws(ModelError) -> SQLiteLayout {
        guard let layout = current.withLock({ $0 }) else {
            throw ModelError(.invalidArgument, "this staged migration of \(store.location) is over")
        }
        return layout
    }

    /// Runs `body` on the leased writer, inside the migration's transaction. Should SQLite have
    /// ended the transaction under an earlier call (an interrupted statement rolls it back), the
    /// migration is over, and says so, rather than going on in autocommit.
    private func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection, SQLiteLayout) throws -> T)
        async throws -> T
    {
        let layout = try layout()
        let location = store.location
        let lost = Mutex(false)
        do {
            return try await store.writer.run(lease: .holding(lease)) { connection in
                guard connection.isInTransaction else {
                    lost.withLock { $0 = true }
                    throw ModelError(
                        .storageFailure,
                        "the staged migration of \(location) was rolled back by SQLite (an interrupted statement ends the transaction); nothing of it was kept: begin it again"
                    )
                }
                return try body(connection, layout)
            }
        } catch {
            if lost.withLock({ $0 }) { await rollback() }
            throw error
        }
    }

    func schema() async throws -> ResolvedSchema { try layout().schema }

    func migrate(to schema: Schema, options: MigrationOptions) async throws -> MigrationPlan {
        let resolved = try ResolvedSchema.resolved(schema)
        let storeIdentifier = store.storeIdentifier
        var options = options
        options.author = options.author ?? author
        let stepOptions = options
        let (plan, layout) = try await run { connection, _ in
            try connection.savepoint {
                try SQLiteStore.migrate(
                    connection, to: resolved, options: stepOptions, storeIdentifier: storeIdentifier)
            }
        }
        if let layout { current.withLock { if $0 != nil { $0 = layout } } }
        return plan
    }

    func fetch(_ descriptor: FetchDescriptor, overlay: ChangeSet?) async throws -> FetchResult {
        let validated = try descriptor.validated(in: try layout().schema, storeIdentifier: store.storeIdentifier)
        let storeIdentifier = store.storeIdentifier
        return try await run { connection, layout in
            try ReadContext.read(connection, layout: layout, storeIdentifier: storeIdentifier, overlay: overlay) {
                try $0.fetch(validated)
            }
        }
    }

    func fetchObjects(
        _ descriptor: FetchDescriptor, batchSize: Int,
        _ body: (_ batch: [ObjectSnapshot], _ prefetched: Bool) async throws -> Void
    ) async throws -> Int {
        var descriptor = descriptor
        descriptor.resultType = .objects
        return try await Self.inBatches(try await fetch(descriptor, overlay: nil), batchSize: batchSize, body)
    }

    func aggregate(_ descriptor: AggregateDescriptor, overlay: ChangeSet?) async throws -> [AggregateRow] {
        let validated = try descriptor.validated(in: try layout().schema, storeIdentifier: store.storeIdentifier)
        let storeIdentifier = store.storeIdentifier
        return try await run { connection, layout in
            try ReadContext.read(
                connection, layout: layout, storeIdentifier: storeIdentifier, overlay: overlay, singleStatement: true
            ) {
                try $0.aggregate(validated, hashedGroupLimit: HashAggregate.groupLimit).rows
            }
        }
    }

    func snapshots(for ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        let schema = try layout().schema
        let keys = try ObjectLookup.keysByRoot(ids, schema: schema, storeIdentifier: store.storeIdentifier)
        guard !keys.isEmpty else { return [] }
        let storeIdentifier = store.storeIdentifier
        let found = try await run { [keys] connection, layout in
            try ReadContext.read(connection, layout: layout, storeIdentifier: storeIdentifier) {
                try $0.objectsByRoot(keys)
            }
        }
        return ids.compactMap { ObjectLookup.match($0, in: found, schema: schema) }
    }

    func save(_ changes: ChangeSet) async throws -> SaveResult {
        guard !changes.isEmpty else { return SaveResult() }
        try ChangeSetPlan.checkIdentifiers(changes, schema: try layout().schema, storeIdentifier: store.storeIdentifier)
        let storeIdentifier = store.storeIdentifier
        return try await run { connection, layout in
            try connection.savepoint {
                try SaveOperation(
                    connection: connection, layout: layout, storeIdentifier: storeIdentifier, changes: changes
                ).run()
            }
        }
    }

    func history(after token: HistoryToken?, limit: Int?) async throws -> [HistoryTransaction] {
        if let limit, limit < 0 { throw ModelError(.invalidArgument, "limit \(limit) is negative") }
        let storeIdentifier = store.storeIdentifier
        return try await run { connection, _ in
            try SQLiteStore.history(connection, after: token, limit: limit, storeIdentifier: storeIdentifier)
        }
    }

    func currentHistoryToken() async throws -> HistoryToken? {
        let value = try await run { connection, _ in
            try StoreMetadata.sequence(StoreMetadata.historySequence, connection)
        }
        return value > 0 ? HistoryToken(value) : nil
    }

    /// Commits the transaction; the store's cached layout becomes the last step's. A commit
    /// that fails rolls back: the store stays as it was.
    func commit() async throws {
        let layout = try layout()
        let location = store.location
        defer { current.withLock { $0 = nil } }
        try await store.writer.run(lease: .release(lease)) { connection in
            guard connection.isInTransaction else {
                throw ModelError(
                    .storageFailure,
                    "the staged migration of \(location) was rolled back by SQLite before its commit; nothing of it was kept"
                )
            }
            do {
                try connection.run("COMMIT")
            } catch {
                if connection.isInTransaction { _ = try? connection.run("ROLLBACK") }
                connection.overlaySchemaHash = nil
                throw error
            }
        }
        store.setLayout(layout)
    }

    /// Rolls the transaction back and gives the writer back to the store.
    func rollback() async {
        guard
            current.withLock({ layout in
                defer { layout = nil }; return layout != nil
            })
        else { return }
        _ = try? await store.writer.run(lease: .release(lease)) { connection in
            if connection.isInTransaction { try connection.run("ROLLBACK") }
            // Overlay tables made inside the transaction went with it: made again at the next.
            connection.overlaySchemaHash = nil
        }
    }

}
