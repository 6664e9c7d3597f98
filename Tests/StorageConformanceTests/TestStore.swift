import Foundation
import ModelCore
import ModelStorage
import Testing

// Foundation has types of these names too; in this module they mean ModelCore's.
typealias Predicate = ModelCore.Predicate
typealias Expression = ModelCore.Expression
typealias SortDescriptor = ModelCore.SortDescriptor

/// A store opened for one test, with its schema applied.
struct TestStore: Sendable {
    let backend: any StorageBackend
    let directory: URL?
    let schema: ResolvedSchema

    var storeIdentifier: UUID { backend.storeIdentifier }

    /// Opens a fresh store of `kind` and applies `schema`.
    static func open(_ kind: BackendKind, schema: Schema) async throws -> TestStore {
        let (backend, directory) = try await kind.open()
        let store = TestStore(backend: backend, directory: directory, schema: try ResolvedSchema(schema))
        do {
            try await backend.apply(schema: schema)
        } catch {
            await store.close()
            throw error
        }
        return store
    }

    /// Closes the store and removes its directory.
    func close() async {
        await backend.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// A change set builder for this store.
    func changes(author: String? = nil, policy: UniquenessPolicy = .error) -> Changes {
        Changes(schema: schema, storeIdentifier: storeIdentifier, author: author, policy: policy)
    }

    /// Saves `changes`; the result maps temporary identifiers to permanent ones.
    @discardableResult
    func save(_ changes: Changes) async throws -> Saved {
        Saved(result: try await backend.save(changes.set))
    }

    /// The identifier of object `key` of `entity` in this store.
    func id(_ entity: String, _ key: Int64) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }

    /// Fetches snapshots of `entity` matching predicate text, sorted by sort keys in text form
    /// (`name`, `-name`, `name:c`).
    func fetch(
        _ entity: String, _ predicate: String? = nil, sort: [String] = [], offset: Int = 0, limit: Int? = nil,
        includesSubentities: Bool = true, overlay: Changes? = nil
    ) async throws -> [ObjectSnapshot] {
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: try predicate.map(PredicateParser.parse),
            sortBy: try sort.map { try SortDescriptor(parsing: $0) }, offset: offset, limit: limit,
            includesSubentities: includesSubentities)
        return try await backend.fetch(descriptor, overlay: overlay?.set).objects
    }

    /// The values of attribute `key` of the objects `fetch` returns, as text (nil as "nil").
    func values(
        _ entity: String, _ predicate: String? = nil, key: String, sort: [String] = [],
        includesSubentities: Bool = true, overlay: Changes? = nil
    ) async throws -> [String] {
        try await fetch(entity, predicate, sort: sort, includesSubentities: includesSubentities, overlay: overlay)
            .map { $0[key].textForm ?? "nil" }
    }

    /// The snapshot of one object, which must exist.
    func snapshot(_ id: PersistentIdentifier) async throws -> ObjectSnapshot {
        try #require(try await backend.snapshots(for: [id]).first, "no object \(id)")
    }

    /// Everything a client can observe: every object of every hierarchy, and the history.
    func dump() async throws -> StoreDump {
        var objects: [ObjectSnapshot] = []
        for root in schema.rootEntities {
            objects += try await backend.fetch(FetchDescriptor(entityName: root.name)).objects
        }
        return StoreDump(
            objects: objects, history: try await backend.history(after: nil, limit: nil),
            token: try await backend.currentHistoryToken())
    }
}

/// What ``TestStore/dump()`` observes, to check that a failed request changed nothing.
struct StoreDump: Equatable {
    var objects: [ObjectSnapshot]
    var history: [HistoryTransaction]
    var token: HistoryToken?
}

/// A save's result, with temporary identifiers looked up in its remap.
struct Saved {
    let result: SaveResult

    /// The permanent identifier of `id` (itself when it was not remapped).
    subscript(_ id: PersistentIdentifier) -> PersistentIdentifier {
        result.remappedIdentifiers[id] ?? id
    }
}

/// Runs `body` with a fresh store of `kind` with `schema`, closing it afterwards, even when
/// `body` throws.
func withStore(_ kind: BackendKind, _ schema: Schema, _ body: (TestStore) async throws -> Void) async throws {
    let store = try await TestStore.open(kind, schema: schema)
    do {
        try await body(store)
    } catch {
        await store.close()
        throw error
    }
    await store.close()
}
