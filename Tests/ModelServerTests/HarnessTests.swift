import Foundation
import ModelRemote
import ModelCore
import ModelFixtures
import ModelTesting
import Testing

/// ModelTesting itself: a store per test, dropped afterwards, also when the test fails.
@Suite struct HarnessTests {
    struct Planned: Error {}

    @Test func storesAreDroppedAfterTheTestEvenWhenItFails() async throws {
        let daemon = try await TestDaemon.shared
        let name = Shared<String>("")
        await #expect(throws: Planned.self) {
            try await withTestStore(schema: SampleTrips.schema) { store in
                name.update { $0 = store.name }
                #expect(try await store.client.store(store.name).entities.contains("Trip"))
                throw Planned()
            }
        }
        let stores = try await daemon.withClient { try await $0.stores() }
        #expect(!name.value.isEmpty && !stores.map(\.name).contains(name.value))
    }

    @Test func eachTestGetsAStoreOfItsOwn() async throws {
        let names = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<8 {
                group.addTask {
                    try await withTestStore(schema: Catalog.schema) { store in
                        try await store.client.apply(
                            [
                                .insert(
                                    entity: "Library", attributes: ["name": .string("L\(i)")], relationships: [:],
                                    id: nil)
                            ], in: store.name)
                        // Each store sees only its own object.
                        #expect(try await store.values("Library", key: "name") == ["L\(i)"])
                        return store.name
                    }
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(names.count == 8)
    }

    @Test(.isolatedStore(schema: Articles.schema))
    func theTraitHandsTheTestItsStore() async throws {
        let store = try #require(TestStore.current)
        #expect(store.info.entities.contains("Article"))
        #expect(try await store.client.count(FetchDescriptor(entityName: "Article"), in: store.name) == 0)
    }

    @Test func perTestDaemonsGoAwayWithTheirDirectory() async throws {
        let directory = try await withTestStore(daemon: .perTest) { store in
            #expect(FileManager.default.fileExists(atPath: store.socketPath))
            return URL(fileURLWithPath: store.socketPath).deletingLastPathComponent()
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    @Test func theRealExecutableCanBeSpawned() async throws {
        let process = try await ModeldProcess.launch(arguments: ["--default-store", "spawned"])
        let stores = try await DaemonClient.withClient(socketPath: process.socketPath) { try await $0.stores() }
        #expect(stores.map(\.name) == ["spawned"])
        #expect(try await process.stop() == 0)
        await process.remove()
        #expect(!FileManager.default.fileExists(atPath: process.directory.path))
    }

    /// A modeld that is not there is named in the error, which is a ModelError (it was
    /// Foundation's "The file doesn't exist.").
    @Test func aMissingExecutableIsNamed() async throws {
        let missing = URL(fileURLWithPath: "/nonexistent/modeld")
        do {
            _ = try await ModeldProcess.launch(executable: missing)
            Issue.record("a daemon was launched from \(missing.path)")
        } catch let error as ModelError {
            #expect(error.code == .notFound)
            #expect(error.message.hasPrefix("/nonexistent/modeld is not an executable file"), "\(error)")
        }
    }

    /// A shared daemon's directory left by a test process that trapped (its exit handlers never
    /// ran) is removed by the next; one whose process still runs is not.
    @Test func directoriesOfEndedTestProcessesAreRemoved() async throws {
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let abandoned = try TemporaryDirectory.make(prefix: "ms")
        let alive = try TemporaryDirectory.make(prefix: "ms")
        defer { try? FileManager.default.removeItem(at: alive) }
        try "\(ended.processIdentifier)\n".write(
            to: abandoned.appendingPathComponent(".owner-pid"), atomically: true, encoding: .utf8)
        try "\(getpid())\n".write(to: alive.appendingPathComponent(".owner-pid"), atomically: true, encoding: .utf8)
        TemporaryDirectory.removeAbandoned(prefix: "ms")
        #expect(!FileManager.default.fileExists(atPath: abandoned.path))
        #expect(FileManager.default.fileExists(atPath: alive.path))
    }
}
