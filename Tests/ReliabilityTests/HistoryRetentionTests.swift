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

    /// A store's own retention replaces the daemon's for it alone: a store set to keep 3 is
    /// pruned to 3, one set to keep everything keeps everything, one without a setting follows
    /// the daemon's 10. The settings outlive a restart; bad values are refused and change nothing.
    @Test func aStoresOwnRetentionReplacesTheDaemons() async throws {
        try await StalledClients.withDaemon(
            arguments: ["--history-retention-transactions", "10", "--history-prune-interval", "0.1"]
        ) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                for store in ["short", "forever", "default"] {
                    _ = try await client.createStore(store, schema: Catalog.schema)
                }
                let short = try await client.setHistoryRetention(of: "short", transactions: .limit(3))
                #expect(short.historyRetention.transactions == 3 && short.historyRetention.transactionsIsTheStores)
                let forever = try await client.setHistoryRetention(of: "forever", transactions: .unlimited)
                #expect(
                    forever.historyRetention.transactions == nil && forever.historyRetention.transactionsIsTheStores)
                let inherited = try await client.store("default").historyRetention
                #expect(inherited.transactions == 10 && !inherited.transactionsIsTheStores && inherited.age == nil)
                for store in ["short", "forever", "default"] {
                    for n in 0..<20 { try await Self.insert(client, store, "library \(n)") }
                }
                #expect(try await Self.waitForHistory(client, "short") { $0.count <= 3 } == Array(18...20))
                #expect(try await Self.waitForHistory(client, "default") { $0.count <= 10 } == Array(11...20))
                #expect(try await client.history(after: nil, in: "forever").count == 20)

                for bad in [Int64(-2), -100] {
                    let refused = await #expect(throws: ModelError.self) {
                        try await client.setHistoryRetention(of: "forever", transactions: .limit(bad))
                    }
                    #expect(refused?.code == .invalidArgument, "\(String(describing: refused))")
                }
                let unknown = await #expect(throws: ModelError.self) {
                    try await client.setHistoryRetention(of: "nowhere", transactions: .limit(3))
                }
                #expect(unknown?.code == .notFound)
            }
            // Remembered across a restart; 'default' removes the store's own setting.
            try await daemon.restart()
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                #expect(try await client.store("short").historyRetention.transactions == 3)
                #expect(try await client.store("forever").historyRetention.transactionsIsTheStores)
                let back = try await client.setHistoryRetention(of: "forever", transactions: .daemons)
                #expect(back.historyRetention.transactions == 10 && !back.historyRetention.transactionsIsTheStores)
                #expect(try await Self.waitForHistory(client, "forever") { $0.count <= 10 } == Array(11...20))
                // A dropped store's setting goes with it.
                try await client.dropStore("short")
                _ = try await client.createStore("short", schema: Catalog.schema)
                #expect(try await client.store("short").historyRetention.transactions == 10)
            }
        }
    }
}
