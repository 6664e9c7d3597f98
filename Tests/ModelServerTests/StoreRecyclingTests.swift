import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// A dropped SQLite store's files are emptied, after the drop, and given to the next store
/// created (creating and freeing files costs more than writing them), except while another
/// process has the store open.
@Suite struct StoreRecyclingTests {
    private static func inode(_ path: String) throws -> UInt64 {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64)
    }

    private static func binSizes(_ stores: URL) -> [String: Int] {
        let bin = stores.appendingPathComponent(".recycled")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: bin.path)) ?? []
        return Dictionary(
            uniqueKeysWithValues: names.map { name in
                let size =
                    (try? FileManager.default.attributesOfItem(atPath: bin.appendingPathComponent(name).path))?[.size]
                    as? Int
                return (name, size ?? -1)
            })
    }

    /// The bin's sizes once no set in it is still being emptied (they are, in the background).
    private static func emptiedBin(_ stores: URL) async throws -> [String: Int] {
        let deadline = ContinuousClock.now + .seconds(30)
        while Self.binSizes(stores).keys.contains(where: { $0.hasPrefix("pending-") }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("the bin still empties \(Self.binSizes(stores))"); break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return Self.binSizes(stores)
    }

    @Test func aDroppedStoresEmptiedFilesMakeTheNextStore() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mr")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = directory.appendingPathComponent("data/stores")
        let made: (UUID, PersistentIdentifier) = try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                let old = try await client.createStore("old", schema: SampleTrips.schema)
                let oldPath = try #require(old.path)
                _ = try await client.apply(
                    [
                        .insert(
                            entity: "Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"), relationships: [:],
                            id: nil)
                    ], in: "old")
                let oldInode = try Self.inode(oldPath)

                try await client.dropStore("old", force: true)
                #expect(!FileManager.default.fileExists(atPath: oldPath))
                // Emptied: the file is an empty database of five pages of 4 KiB (the schema's page
                // and the root page of each of modeld's four metadata tables), the WAL keeps its
                // blocks but not its header, the -shm is cut to nothing.
                let bin = try await Self.emptiedBin(stores)
                #expect(bin.count == 3, "\(bin)")
                let set = stores.appendingPathComponent(".recycled").appendingPathComponent(
                    try #require(bin.keys.first { $0.hasSuffix(".sqlite") })
                ).path
                #expect(
                    bin.first { $0.key.hasSuffix(".sqlite") }?.value == 5 * 4096
                        && bin.first { $0.key.hasSuffix("-shm") }?.value == 0, "\(bin)")
                let wal = try #require(FileManager.default.contents(atPath: set + "-wal"))
                #expect(wal.count > 32 && wal.prefix(32).allSatisfy { $0 == 0 }, "\(wal.count) bytes")

                let new = try await client.createStore(
                    "new",
                    schema: Schema(entities: [
                        EntityDescription(name: "Note", attributes: [.init(name: "text", type: .string)])
                    ]))
                #expect(try Self.inode(try #require(new.path)) == oldInode)
                #expect(Self.binSizes(stores).isEmpty)
                #expect(
                    new.storeIdentifier != old.storeIdentifier && new.historyToken == nil && new.entities == ["Note"])
                #expect(try await client.history(after: nil, in: "new").isEmpty)
                let saved = try await client.apply(
                    [.insert(entity: "Note", attributes: ["text": .string("kept")], relationships: [:], id: nil)],
                    in: "new")
                return (new.storeIdentifier, try #require(saved.remappedIdentifiers.values.first))
            }
        }
        // The store made of recycled files is durable like any other.
        let reopened: ([String], StoreInfo, [ObjectSnapshot], Int) = try await TestDaemon.withDaemon(
            directory: directory
        ) { daemon in
            try await daemon.withClient { client in
                (
                    try await client.stores().map(\.name), try await client.store("new"),
                    try await client.objects([made.1], in: "new"),
                    try await client.count(FetchDescriptor(entityName: "Note"), in: "new")
                )
            }
        }
        #expect(reopened.0 == ["new"] && reopened.1.storeIdentifier == made.0 && reopened.3 == 1)
        #expect(reopened.2.first?["text"] == .string("kept"))
    }

    @Test func aStoreOpenInAnotherProcessIsDeletedNotRecycled() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                let info = try await client.createStore("shared", schema: SampleTrips.schema)
                let path = try #require(info.path)
                _ = try await client.apply(
                    [
                        .insert(
                            entity: "Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"), relationships: [:],
                            id: nil)
                    ], in: "shared")
                // Another process reads the store and keeps its connection open.
                let reader = Process()
                reader.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                reader.arguments = [
                    "python3", "-c",
                    """
                    import sqlite3, sys, time
                    c = sqlite3.connect(sys.argv[1])
                    print(c.execute('SELECT count(*) FROM "Trip"').fetchone()[0], flush=True)
                    time.sleep(60)
                    """, path,
                ]
                let output = Pipe()
                reader.standardOutput = output
                try reader.run()
                // SIGKILL: with terminate() (SIGTERM) the reader slept out its whole minute.
                defer { kill(reader.processIdentifier, SIGKILL); reader.waitUntilExit() }
                let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
                #expect(line.trimmingCharacters(in: .whitespacesAndNewlines) == "1")

                try await client.dropStore("shared", force: true)
                #expect(!FileManager.default.fileExists(atPath: path))
                #expect(Self.binSizes(daemon.directory.appendingPathComponent("data/stores")).isEmpty)
            }
        }
    }

    /// A store dropped while a fetch streams from it to a client that stopped reading: the
    /// fetch ends, told the store closed, and the next store made of the recycled files holds
    /// nothing of the dropped one (its connection, still open, once showed it the old WAL).
    @Test func aStoreDroppedWhileAFetchStreamsGivesTheNextStoreNothingOfIt() async throws {
        let notes = Schema(entities: [EntityDescription(name: "Note", attributes: [.init(name: "text", type: .string)])]
        )
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                try await client.createStore("old", schema: SampleTrips.schema)
                let long = String(repeating: "x", count: 1000)
                _ = try await client.apply(
                    (0..<2000).map { i in
                        .insert(
                            entity: "Trip", attributes: trip("\(long) \(i)", "2026-04-01", "2026-04-09"),
                            relationships: [:],
                            id: nil)
                    }, in: "old")
                let firstBatch = TestEvent()
                let release = TestEvent()
                let fetch = Task {
                    try await client.fetch(FetchDescriptor(entityName: "Trip"), in: "old", batchSize: 1) { _ in
                        firstBatch.signal()
                        await release.wait()
                    }
                }
                #expect(await firstBatch.wait(), "the fetch never streamed")
                try await client.dropStore("old", force: true)
                let new = try await client.createStore("new", schema: notes)
                #expect(new.entities == ["Note"] && new.historyToken == nil)
                #expect(try await client.count(FetchDescriptor(entityName: "Note"), in: "new") == 0)
                #expect(try await client.history(after: nil, in: "new").isEmpty)
                release.signal()
                let error = await #expect(throws: ModelError.self, "the fetch of the dropped store ended as if whole") {
                    try await fetch.value
                }
                #expect(error?.code == .closed && error?.message.contains("closed while this fetch streamed") == true)
            }
        }
    }

    @Test func theBinKeepsEightSets() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                for i in 0..<10 { try await client.createStore("s\(i)") }
                for i in 0..<10 { try await client.dropStore("s\(i)") }
                let bin = try await Self.emptiedBin(daemon.directory.appendingPathComponent("data/stores"))
                #expect(bin.keys.filter { $0.hasSuffix(".sqlite") }.count == 8, "\(bin.keys.sorted())")
                // No store's file is left outside the bin (the daemon's settings files, which
                // forget dropped stores at their next write, may be).
                let left = try FileManager.default.contentsOfDirectory(
                    atPath: daemon.directory.appendingPathComponent("data/stores").path
                ).filter { !$0.hasSuffix(".json") }
                #expect(left == [".recycled"], "\(left)")
            }
        }
    }

    @Test func theBinIsEmptiedWhenTheDaemonStarts() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mr")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = directory.appendingPathComponent("data/stores")
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                try await client.createStore("a", schema: SampleTrips.schema)
                try await client.dropStore("a")
            }
        }
        // The daemon finished emptying the dropped set, in the background, before it stopped:
        // nothing of it runs on in the directory (a test removing it would find files come back).
        let left = Self.binSizes(stores)
        #expect(left.count == 3 && !left.keys.contains { $0.hasPrefix("pending-") }, "\(left)")
        let names = try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                try await client.stores().map(\.name)
            }
        }
        #expect(names.isEmpty)
        #expect(Self.binSizes(stores).isEmpty)
    }
}
