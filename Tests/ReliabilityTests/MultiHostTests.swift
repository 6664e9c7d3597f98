import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// Several modeld daemons — separate data directories and sockets, as on separate hosts —
/// serving one PostgreSQL store: the same UUID and URIs everywhere, saves through one heard by
/// the history followers of the others, no lost update between them, and no acknowledged save
/// lost when a daemon is killed under load. (PostgreSQL restarting under load is
/// PostgresRestartTests', on a cluster of its own.)
@Suite(.serialized) struct MultiHostTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Counter",
            attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "value", type: .int),
            ], uniqueConstraints: [["name"]]),
        EntityDescription(
            name: "Entry",
            attributes: [
                AttributeDescription(name: "label", type: .string), AttributeDescription(name: "daemon", type: .int),
            ], uniqueConstraints: [["label"]]),
    ])

    /// Two daemons with the store `shared` at a new PostgreSQL namespace: made by the first,
    /// joined by the second.
    private func withTwoDaemons(
        on cluster: PostgresCluster? = nil, _ body: (ModeldProcess, ModeldProcess, String) async throws -> Void
    ) async throws {
        // The test cluster trusts local users, so the password goes unused: it is there to be
        // kept out of what the daemons show.
        let url =
            (try cluster?.freshStoreURL() ?? PostgresServer.freshStoreURL())
            + "&password=hush-\(UUID().uuidString.prefix(8))"
        let first = try await ModeldProcess.launch(arguments: ["--default-store", ""])
        let second: ModeldProcess
        do {
            second = try await ModeldProcess.launch(arguments: ["--default-store", ""])
        } catch {
            await first.remove()
            throw error
        }
        do {
            try await serve(first, second, url, body)
        } catch {
            await first.remove()
            await second.remove()
            throw error
        }
        await first.remove()
        await second.remove()
    }

    private func serve(
        _ first: ModeldProcess, _ second: ModeldProcess, _ url: String,
        _ body: (ModeldProcess, ModeldProcess, String) async throws -> Void
    ) async throws {
        let made = try await DaemonClient.withClient(socketPath: first.socketPath) {
            try await $0.createStore("shared", backend: nil, url: url, schema: Self.schema)
        }
        let joined = try await DaemonClient.withClient(socketPath: second.socketPath) {
            try await $0.createStore("shared", backend: nil, url: url, schema: Self.schema)
        }
        #expect(made.backend == "postgres" && joined.backend == "postgres")
        #expect(made.storeIdentifier == joined.storeIdentifier, "both daemons serve one store, with one UUID")
        // The URL's password stays out of what a client sees, and in a file only the daemon's
        // user reads (it needs it to open the store again when restarted).
        let password = try #require(URLComponents(string: url)?.queryItems?.first { $0.name == "password" }?.value)
        #expect(!made.url.contains(password) && made.url.contains("password=***"), "\(made.url)")
        let attached = URL(fileURLWithPath: first.dataDirectory).appendingPathComponent("stores/attached.json").path
        let mode = try FileManager.default.attributesOfItem(atPath: attached)[.posixPermissions] as? Int
        #expect(mode == 0o600, "attached.json is mode \(String(mode ?? 0, radix: 8))")
        #expect(try String(contentsOfFile: attached, encoding: .utf8).contains(password))
        try await body(first, second, url)
    }

    private static func insert(_ entity: String, _ attributes: [String: Value]) -> ObjectEdit {
        .insert(entity: entity, attributes: attributes, relationships: [:], id: nil)
    }

    @Test func objectsAndHistoryAreSharedAndFollowersHearOtherDaemons() async throws {
        try await withTwoDaemons { first, second, _ in
            try await DaemonClient.withClient(socketPath: first.socketPath) { a in
                try await DaemonClient.withClient(socketPath: second.socketPath) { b in
                    // Saved through one, fetched by URI through the other.
                    let saved = try await a.apply(
                        [Self.insert("Entry", ["label": .string("first"), "daemon": .int(1)])],
                        in: "shared")
                    let id = try #require(saved.remappedIdentifiers.values.first)
                    let parsed = try PersistentIdentifier(uri: id.uriRepresentation)
                    let seen = try await b.objects([parsed], in: "shared")
                    #expect(seen.map { $0["label"] } == [.string("first")])

                    // A follower on the second daemon hears every save through the first.
                    let start = try await b.store("shared").historyToken
                    let heard = Mutex<[Int64: ContinuousClock.Instant]>([:])
                    let acknowledged = Mutex<[Int64: ContinuousClock.Instant]>([:])
                    let saves = 40
                    let follower = Task {
                        try await b.followHistory(after: start, in: "shared") { transaction in
                            heard.withLock { $0[transaction.token.rawValue] = .now }
                            if heard.withLock({ $0.count }) >= saves { throw CancellationError() }
                        }
                    }
                    try await Task.sleep(for: .milliseconds(300)) // the follower is listening
                    for index in 0..<saves {
                        let outcome = try await a.apply(
                            [Self.insert("Entry", ["label": .string("e\(index)"), "daemon": .int(1)])],
                            in: "shared")
                        let token = try #require(outcome.token).rawValue
                        acknowledged.withLock { $0[token] = .now }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    _ = await follower.result
                    let delays = acknowledged.withLock { $0 }.compactMap { token, at in
                        heard.withLock { $0[token] }.map { max(.zero, $0 - at) }
                    }.sorted()
                    #expect(delays.count == saves, "the follower heard \(delays.count) of \(saves) saves")
                    if !delays.isEmpty {
                        print(
                            "multi-host: a save through one daemon reached a follower on another after p50 \(delays[delays.count / 2]), max \(delays.last!) (\(saves) saves)"
                        )
                    }
                }
            }
        }
    }

    @Test func sixteenClientsOnEachDaemonLoseNoUpdate() async throws {
        try await withTwoDaemons { first, second, _ in
            let counters = try await DaemonClient.withClient(socketPath: first.socketPath) { client in
                let saved = try await client.apply(
                    ["a", "b"].map { Self.insert("Counter", ["name": .string($0), "value": .int(0)]) },
                    in: "shared")
                return saved.remappedIdentifiers.values.sorted { $0.primaryKey ?? 0 < $1.primaryKey ?? 0 }
            }
            let aborted = Shared(0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<32 {
                    let socket = client % 2 == 0 ? first.socketPath : second.socketPath
                    group.addTask {
                        try await DaemonClient.withClient(socketPath: socket) { connection in
                            var applied = 0
                            while applied < 5 {
                                let session = try await connection.openSession(on: "shared", author: "c\(client)")
                                for object in try await session.objects(counters) {
                                    guard case .int(let value) = object["value"] else { continue }
                                    try await session.update(object.id, attributes: ["value": .int(value + 1)])
                                }
                                do {
                                    try await session.save()
                                    applied += 1
                                } catch let error as ModelError where error.code == .conflict {
                                    aborted.update { $0 += 1 }
                                }
                                try await session.close()
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let values = try await DaemonClient.withClient(socketPath: second.socketPath) {
                try await $0.objects(counters, in: "shared").map { $0["value"] }
            }
            #expect(values == [.int(160), .int(160)], "\(aborted.value) saves were refused as conflicts")
            #expect(aborted.value > 0, "32 clients on two daemons never collided: the test did not test conflicts")
        }
    }

    @Test func killingADaemonUnderLoadLosesNoAcknowledgedSave() async throws {
        try await withTwoDaemons { first, second, _ in
            let acknowledged = Shared<Set<String>>([])
            let failures = Shared<[String]>([])
            let stop = Shared(false)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<8 {
                    let daemon = client % 2 == 0 ? first : second
                    group.addTask {
                        var index = 0
                        while !stop.value {
                            index += 1
                            let label = "c\(client)-\(index)"
                            do {
                                try await DaemonClient.withClient(socketPath: daemon.socketPath) { connection in
                                    _ = try await connection.apply(
                                        [
                                            Self.insert(
                                                "Entry", ["label": .string(label), "daemon": .int(Int64(client % 2))])
                                        ],
                                        in: "shared")
                                }
                                acknowledged.update { _ = $0.insert(label) }
                            } catch let error as ModelError {
                                // A killed daemon's socket refuses.
                                if error.code != .unavailable && error.code != .notFound {
                                    failures.update { $0.append("\(label): \(error)") }
                                }
                                try? await Task.sleep(for: .milliseconds(50))
                            } catch {
                                try? await Task.sleep(for: .milliseconds(50))
                            }
                        }
                    }
                }
                try await Task.sleep(for: .milliseconds(800))
                try await first.kill()
                try await first.restart()
                // Work resumes by itself: new saves are acknowledged through both daemons.
                let before = acknowledged.value.count
                let deadline = ContinuousClock.now + .seconds(30)
                while acknowledged.value.count < before + 20, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(acknowledged.value.count >= before + 20, "saves went on by themselves after the restarts")
                stop.update { $0 = true }
                try await group.waitForAll()
            }
            #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
            let stored = try await DaemonClient.withClient(socketPath: second.socketPath) { client in
                try await client.fetch(FetchDescriptor(entityName: "Entry"), in: "shared").objects.compactMap {
                    if case .string(let label) = $0["label"] { return label }
                    return nil
                }
            }
            let missing = acknowledged.value.subtracting(stored)
            #expect(missing.isEmpty, "acknowledged saves missing: \(missing.sorted().prefix(10))")
            print(
                "multi-host: \(acknowledged.value.count) saves acknowledged through a daemon kill, all stored"
            )
        }
    }

    /// PostgreSQL (a cluster of the test's own) restarts while clients save through both daemons:
    /// calls in the gap fail UNAVAILABLE naming PostgreSQL, the clients' connections to the daemons
    /// stay up, saves go on through both daemons by themselves, and every acknowledged one is stored.
    @Test func restartingPostgreSQLUnderLoadLosesNoAcknowledgedSave() async throws {
        try await PostgresCluster.with(restartUnderLoad)
    }

    private func restartUnderLoad(_ cluster: PostgresCluster) async throws {
        try await withTwoDaemons(on: cluster) { first, second, _ in
            let acknowledged = Shared<[Int: Set<String>]>([:])
            let gap = Shared<[String]>([]), failures = Shared<[String]>([])
            let stop = Shared(false)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<8 {
                    let daemon = client % 2 == 0 ? first : second
                    group.addTask {
                        // One connection to the daemon for the whole run.
                        try await DaemonClient.withClient(socketPath: daemon.socketPath) { connection in
                            var index = 0
                            while !stop.value {
                                index += 1
                                let label = "r\(client)-\(index)"
                                do {
                                    _ = try await connection.apply(
                                        [
                                            Self.insert(
                                                "Entry", ["label": .string(label), "daemon": .int(Int64(client % 2))])
                                        ],
                                        in: "shared")
                                    acknowledged.update { _ = $0[client % 2, default: []].insert(label) }
                                } catch let error as ModelError
                                    where error.code == .unavailable && error.message.contains("PostgreSQL")
                                {
                                    gap.update { $0.append(error.message) }
                                    try? await Task.sleep(for: .milliseconds(50))
                                } catch {
                                    failures.update { $0.append("\(label): \(error)") }
                                    try? await Task.sleep(for: .milliseconds(50))
                                }
                            }
                        }
                    }
                }
                func saves() -> (Int, Int) {
                    let value = acknowledged.value
                    return (value[0]?.count ?? 0, value[1]?.count ?? 0)
                }
                func waitForSaves(_ what: String, _ condition: ((Int, Int)) -> Bool) async throws {
                    let deadline = ContinuousClock.now + .seconds(60)
                    while !condition(saves()), ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    #expect(condition(saves()), "\(what): \(saves())")
                }
                try await waitForSaves("saves through both daemons before the restart") { $0.0 >= 10 && $0.1 >= 10 }
                try await cluster.restart()
                let before = saves()
                // Work resumes by itself, through both daemons.
                try await waitForSaves("saves through both daemons after the restart") {
                    $0.0 >= before.0 + 20 && $0.1 >= before.1 + 20
                }
                stop.update { $0 = true }
                try await group.waitForAll()
            }
            #expect(failures.value.isEmpty, "errors other than UNAVAILABLE: \(failures.value.prefix(5))")
            let stored = try await DaemonClient.withClient(socketPath: second.socketPath) { client in
                try await client.fetch(FetchDescriptor(entityName: "Entry"), in: "shared").objects.compactMap {
                    if case .string(let label) = $0["label"] { return label }
                    return nil
                }
            }
            let all = acknowledged.value.values.reduce(into: Set<String>()) { $0.formUnion($1) }
            let missing = all.subtracting(stored)
            #expect(missing.isEmpty, "acknowledged saves missing: \(missing.sorted().prefix(10))")
            print(
                "multi-host: PostgreSQL restarted under 2x4 clients: \(all.count) saves acknowledged, all stored; \(gap.value.count) calls UNAVAILABLE in the gap (e.g. \(gap.value.first ?? "-"))"
            )
        }
    }
}
