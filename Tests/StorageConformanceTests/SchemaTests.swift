import Foundation
import ModelCore
import ModelFixtures
import Testing

/// `schema()` and `apply(schema:)`: allowed on an empty store or with the same version hash,
/// otherwise `schemaMismatch` spelling out the differences.
@Suite struct SchemaTests {
    @Test(arguments: BackendKind.allCases)
    func aNewStoreHasAnEmptySchemaAndTakesAnyValidOne(_ kind: BackendKind) async throws {
        let (backend, directory) = try await kind.open()
        defer { if let directory { try? FileManager.default.removeItem(at: directory) } }
        #expect(try await backend.schema().entityNames.isEmpty)
        #expect(
            await modelError { _ = try await backend.fetch(FetchDescriptor(entityName: "Item")) }?.code
                == .unknownEntity)
        var invalid = Catalog.schema
        invalid.entities[0].attributes.append(AttributeDescription(name: "title", type: .int))
        #expect(await modelError { try await backend.apply(schema: invalid) }?.code == .invalidSchema)
        try await backend.apply(schema: Articles.schema)
        // Still empty: another schema is fine.
        try await backend.apply(schema: Catalog.schema)
        #expect(try await backend.schema().versionHash == ResolvedSchema(Catalog.schema).versionHash)
        await backend.close()
    }

    @Test(arguments: BackendKind.allCases)
    func theSameSchemaKeepsTheData(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            var reordered = Catalog.schema
            reordered.entities.reverse()
            reordered.entities[reordered.entities.count - 1].attributes.reverse()
            try await store.backend.apply(schema: reordered)
            try await store.backend.apply(schema: Catalog.schema)
            #expect(try await store.fetch("Item").count == 6)
            #expect(try await store.backend.schema().versionHash == store.schema.versionHash)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func anotherSchemaOnAStoreWithObjectsIsAMismatch(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            let before = try await store.dump()
            var changed = Catalog.schema
            changed.entities[0].attributes.append(AttributeDescription(name: "colour", type: .string, isOptional: true))
            changed.entities.append(
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]))
            let error = try #require(await modelError { try await store.backend.apply(schema: changed) })
            #expect(error.code == .schemaMismatch)
            for line in changed.differences(from: Catalog.schema) {
                #expect(error.message.contains(line), "\(line)")
            }
            #expect(try await store.backend.schema().versionHash == store.schema.versionHash)
            #expect(try await store.dump() == before)

            // Once the objects are gone, the store takes the new schema; keys are still not reused.
            var d = store.changes()
            for snapshot in try await store.dump().objects { d.delete(snapshot.id) }
            try await store.save(d)
            try await store.backend.apply(schema: changed)
            var c = Changes(schema: try ResolvedSchema(changed), storeIdentifier: store.storeIdentifier)
            let item = c.insert("Item", ["title": .string("again"), "colour": .string("red")])
            let saved = Saved(result: try await store.backend.save(c.set))
            #expect(saved[item] == store.id("Item", 7))
            #expect(try await store.backend.currentHistoryToken() == HistoryToken(3))
        }
    }
}
