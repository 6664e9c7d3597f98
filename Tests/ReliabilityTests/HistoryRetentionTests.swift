import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// The daemon's history retention (`--history-retention-transactions`, `--history-retention-age`):
/// the oldest transactions are deleted in the background while saves go on, and a reader behind
/// them is told its token expired. Against the spawned `modeld`.
@Suite struct HistoryRetentionTests {
    /// Waits (for an event: the history as the daemon reports it) until `done` holds, failing
    /// after 30 seconds.
    static func waitForHistory(
        _ client: DaemonClient, _ store: String, _ done: ([Int64]) -> Bool
    ) async throws -> [Int64] {
        let deadline = ContinuousClock.now + .seconds(30)
        var tokens: [Int64] = []
        while ContinuousClock.now < deadline {
            tokens = try await client.history(after: nil, in: store).map(\.token.rawValue)
            if done(tokens) { return tokens }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("history never reached the retention: \(tokens)")
        return tokens
    }

    static func insert(_ client: DaemonClient, _ store: String, _ name: String) async throws {
        try await client.apply(
            [.insert(entity: "Library", attributes: ["name": .string(name)], relationships: [:], id: nil)], in: store)
    }

    @Test func aStoreKeepsItsNewestTransactions() async throws {
        try await StalledClients.withDaemon(
            arguments: ["--history-retention-transactions", "5", "--history-prune-interval", "0.1"]
        ) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await client.createStore("kept", schema: Catalog.schema)
                for n in 0..<40 { try await Self.insert(client, "kept", "library \(n)") }
                let tokens = try await Self.waitForHistory(client, "kept") { $0.count <= 5 }
                #expect(tokens == Array(36...40), "\(tokens)")
                // Saves went on; the objects are all there.
                #expect(try await client.count(FetchDescriptor(entityName: "Library"), in: "kept") == 40)
                let expired = await #expect(throws: ModelError.self) {
                    _ = try await client.history(after: HistoryToken(10), in: "kept")
                }
                #expect(expired?.code == .historyTokenExpired)
            }
        }
    }

    @Test func transactionsOlderThanTheAgeGo() async throws {
        try await StalledClients.withDaemon(
            arguments: ["--history-retention-age", "3s", "--history-prune-interval", "0.1"]
        ) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await client.createStore("aged", schema: Catalog.schema)
                for n in 0..<3 { try await Self.insert(client, "aged", "old \(n)") }
                _ = try await Self.waitForHistory(client, "aged") { $0.isEmpty }
                try await Self.insert(client, "aged", "new")
                // The new one is kept until it is three seconds old.
                let now = try await client.history(after: nil, in: "aged").map(\.token.rawValue)
                #expect(now == [4])
            }
        }
    }
}
