import Foundation
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// A store in memory dies with the daemon, and so does its access record: its owner is kept in
/// memory, and the access list on disk (`access.json`) is not written, nor synced, to make one.
@Suite struct MemoryStoreAccessTests {
    @Test func aMemoryStoresOwnerIsKeptWithoutWritingTheAccessList() async throws {
        let directory = try TemporaryDirectory.make(prefix: "ma")
        defer { try? FileManager.default.removeItem(at: directory) }
        let list = directory.appendingPathComponent("data/stores/access.json")
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                let made = try await client.createStore("fleeting", kind: .memory)
                #expect(made.owner != nil)
                #expect(try await client.store("fleeting").owner == made.owner)
                #expect(!FileManager.default.fileExists(atPath: list.path))

                // A memory store that could not be made leaves no record behind.
                var broken = SampleTrips.schema
                broken.entities[0].relationships[0].destination = "Nowhere"
                await #expect(throws: (any Error).self) {
                    try await client.createStore("broken", kind: .memory, schema: broken)
                }

                // A grant writes the list: the records of the store on disk (whose owner is also
                // kept in the store) and of the memory store.
                _ = try await client.createStore("kept")
                try await client.grantAccess(to: .user("nobody"), on: "kept", write: false)
                let records = try JSONSerialization.jsonObject(with: Data(contentsOf: list)) as? [String: Any]
                #expect(records.map { Set($0.keys) } == ["kept", "fleeting"])
            }
        }
    }
}
