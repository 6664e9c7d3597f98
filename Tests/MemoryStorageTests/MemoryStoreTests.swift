import Foundation
import MemoryStorage
import ModelCore
import ModelFixtures
import ModelStorage
import Synchronization
import Testing

/// What is particular to the memory backend: how stores are opened, the injectable clock, and
/// that stores are independent of each other.
@Suite struct MemoryStoreTests {
    @Test func everyOpenMakesANewEmptyStore() async throws {
        let factory = MemoryStorageFactory()
        #expect(factory.scheme == "memory")
        let location = try StoreLocation(url: "memory:trips")
        let first = try await factory.open(location)
        let second = try await factory.open(location)
        #expect(first.storeIdentifier != second.storeIdentifier)
        #expect(first.location == location)
        try await first.apply(schema: SampleTrips.schema)
        #expect(try await second.schema().entityNames.isEmpty)
        try await factory.destroy(location)
        #expect(try await first.schema().entityNames.count == 5)
        await first.close()
        await second.close()
    }

    @Test func theRegistryOpensMemoryStores() async throws {
        let registry = StorageRegistry([MemoryStorageFactory()])
        let store = try await registry.open(url: "memory:")
        #expect(store is MemoryStore)
        #expect(store.location.url == "memory:")
        let error = await #expect(throws: ModelError.self) {
            try await MemoryStorageFactory().open(StoreLocation(scheme: "sqlite", path: "/x"))
        }
        #expect(error?.code == .invalidArgument)
        await store.close()
    }

    @Test func historyIsStampedByTheInjectedClock() async throws {
        let ticks = Mutex<Int64>(0)
        let store = MemoryStore(
            storeIdentifier: UUID(),
            clock: {
                Timestamp(
                    microsecondsSince1970: ticks.withLock {
                        $0 += 1_000_000; return $0
                    })
            })
        try await store.apply(schema: Articles.schema)
        for name in ["a", "b"] {
            let id = PersistentIdentifier.temporary(storeIdentifier: store.storeIdentifier, entityName: "Category")
            _ = try await store.save(ChangeSet(inserts: [InsertedObject(id: id, attributes: ["name": .string(name)])]))
        }
        let history = try await store.history(after: nil, limit: nil)
        #expect(history.map(\.timestamp.microsecondsSince1970) == [1_000_000, 2_000_000])
        await store.close()
        await store.close()
    }

    /// Stores answer many requests at once; each answer sees a whole save or none of it.
    @Test func concurrentSavesAndFetches() async throws {
        let store = MemoryStore()
        try await store.apply(schema: Articles.schema)
        let storeIdentifier = store.storeIdentifier
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for batch in 0..<10 {
                        let inserts = (0..<5).map { index in
                            InsertedObject(
                                id: .temporary(storeIdentifier: storeIdentifier, entityName: "Student"),
                                attributes: [
                                    "name": .string("\(writer)-\(batch)-\(index)"),
                                    "birthOfYear": .int(Int64(1990 + index)),
                                ])
                        }
                        _ = try await store.save(ChangeSet(inserts: inserts))
                        let count = try await store.fetch(FetchDescriptor(entityName: "Student", resultType: .count))
                            .count
                        #expect(count % 5 == 0)
                    }
                }
            }
            try await group.waitForAll()
        }
        let students = try await store.fetch(FetchDescriptor(entityName: "Student", resultType: .identifiers))
            .identifiers
        #expect(students.compactMap(\.primaryKey) == Array(1...400))
        #expect(try await store.currentHistoryToken() == HistoryToken(80))
        await store.close()
    }
}
