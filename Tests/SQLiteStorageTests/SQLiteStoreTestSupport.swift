import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import SQLiteStorage
import Testing

// Foundation has types of these names too; in this module they mean ModelCore's.
typealias Predicate = ModelCore.Predicate
typealias Expression = ModelCore.Expression

/// Opens an SQLite store at `path` with `schema` applied.
func openStore(_ path: String, schema: Schema? = nil) async throws -> SQLiteStore {
    let store = try await SQLiteStore.open(path: path)
    if let schema { try await store.apply(schema: schema) }
    return store
}

/// Runs `body` with a fresh store holding `schema`, in its own directory, closing it afterwards.
func withStore(_ schema: Schema, _ body: (SQLiteStore, String) async throws -> Void) async throws {
    try await withTemporaryDirectory { directory in
        let path = directory.appendingPathComponent("store.sqlite").path
        let store = try await openStore(path, schema: schema)
        do {
            try await body(store, path)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}

extension SQLiteStore {
    /// A new temporary identifier of `entity` in this store.
    func temporary(_ entity: String) -> PersistentIdentifier {
        .temporary(storeIdentifier: storeIdentifier, entityName: entity)
    }

    /// The permanent identifier of object `key` of `entity`.
    func id(_ entity: String, _ key: Int64) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }

    /// Inserts one object per attribute dictionary and returns their permanent identifiers.
    @discardableResult
    func insert(_ entity: String, _ objects: [[String: Value]], author: String? = nil) async throws
        -> [PersistentIdentifier]
    {
        let inserts = objects.map { InsertedObject(id: temporary(entity), attributes: $0) }
        let result = try await save(ChangeSet(inserts: inserts, author: author))
        return inserts.compactMap { result.remappedIdentifiers[$0.id] }
    }

    /// The objects of `entity` matching predicate text, sorted by sort keys in text form.
    func objects(_ entity: String, _ predicate: String? = nil, sort: [String] = [], overlay: ChangeSet? = nil)
        async throws -> [ObjectSnapshot]
    {
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: try predicate.map(PredicateParser.parse),
            sortBy: try sort.map { try SortDescriptor(parsing: $0) })
        return try await fetch(descriptor, overlay: overlay).objects
    }

    /// The values of attribute `key` of ``objects(_:_:sort:overlay:)``, as text (nil as "nil").
    func values(
        _ entity: String, _ predicate: String? = nil, key: String, sort: [String] = [], overlay: ChangeSet? = nil
    ) async throws -> [String] {
        try await objects(entity, predicate, sort: sort, overlay: overlay).map { $0[key].textForm ?? "nil" }
    }
}
