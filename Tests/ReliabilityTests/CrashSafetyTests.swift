#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelFixtures
import ModelRemote
import ModelCore
import ModelStorage
import ModelTesting
import Synchronization
import Testing

/// modeld killed with SIGKILL at random moments while clients save: after every restart, every
/// save a client heard acknowledged is there, no save is half there, history has no gaps, and
/// the file is sound. `MODELD_SOAK_KILLS` sets the number of kills (50 in the test suite;
/// `scripts/soak` runs more).
@Suite struct CrashSafetyTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Entry",
            attributes: [
                AttributeDescription(name: "group", type: .string),
                AttributeDescription(name: "part", type: .int),
                AttributeDescription(name: "payload", type: .string),
            ], indexes: [["group"]])
    ])
    static let groupSize = 5
    static let clients = 4

    static var kills: Int { ProcessInfo.processInfo.environment["MODELD_SOAK_KILLS"].flatMap(Int.init) ?? 50 }

    @Test func acknowledgedSavesSurviveSIGKILL() async throws {
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""])
        do {
            _ = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                try await $0.createStore("crash", schema: Self.schema)
            }
            let acknowledged = Shared<Set<String>>([])
            let attempted = Shared(0)
            let stop = Shared(false)
            var random = SystemRandomNumberGenerator()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<Self.clients {
                    group.addTask {
                        await Self.saveForever(
                            client: client, socket: daemon.socketPath, acknowledged: acknowledged, attempted: attempted,
                            stop: stop)
                    }
                }
                for _ in 0..<Self.kills {
                    try await Task.sleep(for: .milliseconds(Int.random(in: 30...250, using: &random)))
                    try await daemon.kill()
                    try await daemon.restart()
                }
                try await Task.sleep(for: .milliseconds(200))
                stop.update { $0 = true }
                try await group.waitForAll()
            }
            let saved = acknowledged.value
            #expect(
                saved.count > Self.kills,
                "clients saved between the kills: \(saved.count) acknowledged of \(attempted.value) attempted")
            print(
                "crash safety: \(Self.kills) kills, \(saved.count) saves acknowledged of \(attempted.value) attempted")

            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                // Every group is whole or absent, and every acknowledged one is there.
                let rows = try await client.aggregate(
                    AggregateDescriptor(
                        entityName: "Entry", groupBy: ["group"],
                        aggregations: [
                            Aggregation("parts", .count), Aggregation("first", .min, "part"),
                            Aggregation("last", .max, "part"),
                        ]), in: "crash")
                var present: Set<String> = []
                for row in rows {
                    guard case .string(let name)? = row["group"] else { continue }
                    present.insert(name)
                    #expect(
                        row["parts"] == .int(Int64(Self.groupSize)) && row["first"] == .int(0)
                            && row["last"] == .int(Int64(Self.groupSize - 1)),
                        "group \(name) is half saved: \(row)")
                }
                let lost = saved.subtracting(present)
                #expect(lost.isEmpty, "acknowledged but lost: \(lost.sorted().prefix(10))")
                // One transaction per group saved, tokens 1…n without gaps.
                let history = try await client.history(after: nil, in: "crash")
                #expect(history.map(\.token.rawValue) == (0..<history.count).map { Int64($0 + 1) })
                #expect(history.count == present.count, "\(history.count) transactions for \(present.count) groups")
                #expect(history.allSatisfy { $0.changes.count == Self.groupSize })
            }
            #expect(try await daemon.stopAndCheckIntegrity(ofStore: "crash") == ["ok"])
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await daemon.remove()
    }

    /// A client saving groups one after another, reconnecting whenever the daemon goes away.
    static func saveForever(
        client: Int, socket: String, acknowledged: Shared<Set<String>>, attempted: Shared<Int>, stop: Shared<Bool>
    ) async {
        var sequence = 0
        while !stop.value {
            do {
                try await DaemonClient.withClient(socketPath: socket) { connection in
                    while !stop.value {
                        sequence += 1
                        let group = "c\(client)-\(sequence)"
                        attempted.update { $0 += 1 }
                        let edits: [ObjectEdit] = (0..<groupSize).map { part in
                            .insert(
                                entity: "Entry",
                                attributes: [
                                    "group": .string(group), "part": .int(Int64(part)),
                                    "payload": .string(String(repeating: "p", count: 200)),
                                ],
                                relationships: [:], id: nil)
                        }
                        try await connection.apply(edits, in: "crash", author: "client-\(client)")
                        acknowledged.update { _ = $0.insert(group) }
                    }
                }
            } catch {
                // The daemon died under the save: its outcome is unknown; try again once it is back.
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }
}
