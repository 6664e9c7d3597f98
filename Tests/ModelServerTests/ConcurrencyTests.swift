import Foundation
import ModelRemote
import ModelCore
import ModelFixtures
import ModelTesting
import Testing

/// Many clients at once, each with its own connection and session.
@Suite struct ConcurrencyTests {
    static let clients = 10
    static let savesPerClient = 100
    static let changesPerSave = 10

    /// Ten clients each save 1,000 changes (100 saves of 10 inserts, or an update among them):
    /// every save a client saw acknowledged is in the store afterwards, and history holds
    /// exactly one transaction per save, each with that save's changes.
    @Test func concurrentSessionsLoseNothing() async throws {
        try await withTestStore(schema: Catalog.schema, daemon: .perTest) { store in
            let acknowledged = try await withThrowingTaskGroup(
                of: [(token: HistoryToken, ids: [PersistentIdentifier], client: Int)].self
            ) { group in
                for client in 0..<Self.clients {
                    group.addTask {
                        try await DaemonClient.withClient(socketPath: store.socketPath) { connection in
                            let session = try await connection.openSession(on: store.name, author: "client-\(client)")
                            var saves: [(HistoryToken, [PersistentIdentifier], Int)] = []
                            for save in 0..<Self.savesPerClient {
                                let temporary = try await session.stage(
                                    (0..<Self.changesPerSave).map { change in
                                        .insert(
                                            entity: "Item",
                                            attributes: [
                                                "title": .string("c\(client)-s\(save)-\(change)"),
                                                "rank": .int(Int64(client)),
                                            ], relationships: [:], id: nil)
                                    })
                                let outcome = try await session.save()
                                let token = try #require(outcome.token)
                                saves.append((token, temporary.map { outcome.remappedIdentifiers[$0]! }, client))
                            }
                            try await session.close()
                            return saves
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(acknowledged.count == Self.clients * Self.savesPerClient)
            let tokens = acknowledged.map(\.token.rawValue).sorted()
            #expect(tokens == Array(1...Int64(Self.clients * Self.savesPerClient)), "tokens are contiguous and unique")

            let total = Self.clients * Self.savesPerClient * Self.changesPerSave
            #expect(try await store.client.count(FetchDescriptor(entityName: "Item"), in: store.name) == total)
            for client in 0..<Self.clients {
                #expect(
                    try await store.client.count(
                        FetchDescriptor(entityName: "Item", predicate: where_("rank == \(client)")), in: store.name)
                        == Self.savesPerClient * Self.changesPerSave)
            }
            let history = try await store.client.history(after: nil, in: store.name)
            #expect(history.count == acknowledged.count)
            let byToken = Dictionary(uniqueKeysWithValues: history.map { ($0.token, $0) })
            for save in acknowledged {
                let transaction = try #require(byToken[save.token])
                #expect(transaction.author == "client-\(save.client)")
                #expect(transaction.changes.map(\.id) == save.ids)
                #expect(transaction.changes.allSatisfy { $0.kind == .insert })
            }
        }
    }
}
