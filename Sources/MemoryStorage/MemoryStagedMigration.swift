import Foundation
import ModelCore
import ModelStorage
import Synchronization

/// A staged migration of a ``MemoryStore``: a store of its own on a copy of the state (so every
/// read, save and step is the memory backend's), whose state replaces the store's at commit.
final class MemoryStagedMigration: StagedMigration {
    private let store: MemoryStore
    private let copy: MemoryStore
    private let author: String?
    private let isOver = Mutex(false)

    init(store: MemoryStore, copy: MemoryStore, author: String?) {
        self.store = store
        self.copy = copy
        self.author = author
    }

    var location: StoreLocation { store.location }
    var storeIdentifier: UUID { store.storeIdentifier }

    /// The copy, or `invalidArgument` once the migration is over.
    private func working() throws(ModelError) -> MemoryStore {
        guard !isOver.withLock({ $0 }) else {
            throw ModelError(.invalidArgument, "this staged migration of \(store.location) is over")
        }
        return copy
    }

    func schema() async throws -> ResolvedSchema { try await working().schema() }

    /// A step; its history names the migration's author unless `options` names another.
    func migrate(to schema: Schema, options: MigrationOptions) async throws -> MigrationPlan {
        var options = options
        options.author = options.author ?? author
        return try await working().migrate(to: schema, options: options)
    }

    func fetch(_ descriptor: FetchDescriptor, overlay: ChangeSet?) async throws -> FetchResult {
        try await working().fetch(descriptor, overlay: overlay)
    }

    func fetchObjects(
        _ descriptor: FetchDescriptor, batchSize: Int,
        _ body: (_ batch: [ObjectSnapshot], _ prefetched: Bool) async throws -> Void
    ) async throws -> Int {
        try await working().fetchObjects(descriptor, batchSize: batchSize, body)
    }

    func aggregate(_ descriptor: AggregateDescriptor, overlay: ChangeSet?) async throws -> [AggregateRow] {
        try await working().aggregate(descriptor, overlay: overlay)
    }

    func snapshots(for ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        try await working().snapshots(for: ids)
    }

    func save(_ changes: ChangeSet) async throws -> SaveResult {
        try await working().save(changes)
    }

    func history(after token: HistoryToken?, limit: Int?) async throws -> [HistoryTransaction] {
        try await working().history(after: token, limit: limit)
    }

    func currentHistoryToken() async throws -> HistoryToken? {
        try await working().currentHistoryToken()
    }

    func commit() async throws {
        let state = try await working().state
        try await end(committing: state)
    }

    func rollback() async {
        try? await end(committing: nil)
    }

    private func end(committing state: MemoryState?) async throws {
        guard
            isOver.withLock({ over in
                defer { over = true }; return !over
            })
        else { return }
        await copy.close()
        try await store.endStagedMigration(ObjectIdentifier(self), state: state)
    }
}
