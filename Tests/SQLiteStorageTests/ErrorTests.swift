import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import SQLiteStorage
import Testing

/// Unhappy paths: each fails with the right code and changes nothing.
@Suite struct ErrorTests {
    @Test func everyCallAfterCloseFailsWithClosed() async throws {
        try await withStore(Articles.schema) { store, _ in
            await store.close()
            #expect(await modelError { _ = try await store.schema() }?.code == .closed)
            #expect(
                await modelError { _ = try await store.fetch(FetchDescriptor(entityName: "Student")) }?.code == .closed)
            #expect(
                await modelError {
                    _ = try await store.save(ChangeSet(deletes: [DeletedObject(id: store.id("Student", 1))]))
                }?.code == .closed)
            #expect(await modelError { _ = try await store.history(after: nil, limit: nil) }?.code == .closed)
            #expect(await modelError { _ = try await store.currentHistoryToken() }?.code == .closed)
            #expect(await modelError { try await store.apply(schema: Articles.schema) }?.code == .closed)
            await store.close()
        }
    }

    @Test func aDifferentSchemaIsRefusedOnceObjectsExist() async throws {
        try await withStore(Articles.schema) { store, _ in
            var changed = Articles.schema
            changed.entities.append(
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]))
            // Without objects the store takes the new schema.
            try await store.apply(schema: changed)
            #expect(try await store.schema().entityNames.contains("Note"))
            try await store.insert("Note", [["text": .string("hi")]])
            let error = await modelError { try await store.apply(schema: Articles.schema) }
            #expect(error?.code == .schemaMismatch)
            #expect(error?.message.contains("- entity Note") == true)
            #expect(try await store.values("Note", key: "text") == ["hi"])
        }
    }

    @Test func identifiersOfAnotherStoreAndUnknownEntities() async throws {
        try await withStore(Articles.schema) { store, _ in
            let foreign = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Student", key: .permanent(1))
            #expect(await modelError { _ = try await store.snapshots(for: [foreign]) }?.code == .invalidIdentifier)
            #expect(
                await modelError { _ = try await store.save(ChangeSet(deletes: [DeletedObject(id: foreign)])) }?.code
                    == .invalidIdentifier)
            #expect(
                await modelError { _ = try await store.fetch(FetchDescriptor(entityName: "Nope")) }?.code
                    == .unknownEntity)
            let missing = try await store.snapshots(for: [store.id("Student", 42)])
            #expect(missing.isEmpty)
        }
    }

    @Test func filesThatAreNotStoresAreRefused() async throws {
        try await withTemporaryDirectory { directory in
            let garbage = directory.appendingPathComponent("garbage.sqlite").path
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: garbage))
            #expect(await modelError { _ = try await SQLiteStore.open(path: garbage) }?.code == .storageFailure)
            await #expect(throws: ModelError.self) {
                try await SQLiteStorageFactory().destroy(StoreLocation(scheme: "sqlite", path: "relative.sqlite"))
            }
        }
    }

    @Test func aFailedSaveWritesNothing() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.insert("Item", [["title": .string("a"), "sku": .string("S")]])
            let before = try await store.objects("Item")
            let changes = ChangeSet(inserts: [
                InsertedObject(id: store.temporary("Item"), attributes: ["title": .string("b")]),
                InsertedObject(id: store.temporary("Item"), attributes: ["title": .string("c"), "sku": .string("S")]),
            ])
            let error = await modelError { _ = try await store.save(changes) }
            #expect(error?.code == .uniqueConstraint)
            #expect(error?.context["uri"] == store.id("Item", 1).uriRepresentation)
            #expect(try await store.objects("Item") == before)
            #expect(try await store.currentHistoryToken() == HistoryToken(1))
            // The keys the failed save would have used are still free.
            #expect(try await store.insert("Item", [["title": .string("d")]]).first?.primaryKey == 2)
        }
    }
}
