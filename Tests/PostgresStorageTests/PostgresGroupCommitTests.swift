import Dispatch
import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import PostgresStorage
import Testing

/// Group commit on PostgreSQL: saves that wait for the store's writer together run in one
/// transaction with one COMMIT, and each still succeeds or fails on its own: a failure aborts
/// PostgreSQL's transaction, so the group's other saves run again, each in a savepoint. The
/// writer is held by a blocking job while the saves queue, so each test knows the group.
@Suite struct PostgresGroupCommitTests {
    /// Holds the store's writer until `release()`: saves queue behind it.
    final class WriterGate: Sendable {
        private let gate = DispatchSemaphore(value: 0)

        init(_ store: PostgresStore) {
            store.writer.submit { [gate] _ in gate.wait() }
        }

        func release() { gate.signal() }
    }

    static func withStore(_ body: (PostgresStore) async throws -> Void) async throws {
        try await PostgresSaveTests.withStore(schema: Catalog.schema, body)
    }

    /// Queues a save inserting each (title, sku) in turn, each queued before the next.
    static func queueInserts(_ store: PostgresStore, _ plan: [(String, String)]) async throws
        -> [Task<SaveResult, any Error>]
    {
        var saves: [Task<SaveResult, any Error>] = []
        for (title, sku) in plan {
            saves.append(Task { try await store.save(Self.insertItem(store, title: title, sku: sku)) })
            let queued = await waitUntilQueued(store.saves, atLeast: saves.count)
            #expect(queued >= saves.count, "only \(queued) of \(saves.count) saves queued")
        }
        return saves
    }

    static func insertItem(
        _ store: PostgresStore, title: String, sku: String, rank: Int64 = 0, policy: UniquenessPolicy = .error
    ) -> ChangeSet {
        ChangeSet(
            inserts: [
                InsertedObject(
                    id: PersistentIdentifier(
                        storeIdentifier: store.storeIdentifier, entityName: "Item", key: .temporary(UUID())),
                    attributes: ["title": .string(title), "sku": .string(sku), "rank": .int(rank)])
            ], uniquenessPolicy: policy)
    }

    /// Each item's title and rank, by sku.
    static func items(_ store: PostgresStore) async throws -> [String: (title: String, rank: Int64)] {
        guard case .objects(let objects, _) = try await store.fetch(FetchDescriptor(entityName: "Item"), overlay: nil)
        else {
            Issue.record("a fetch of objects answered something else")
            return [:]
        }
        var items: [String: (title: String, rank: Int64)] = [:]
        for object in objects {
            if case .string(let sku)? = object.attributes["sku"], case .string(let title)? = object.attributes["title"],
                case .int(let rank)? = object.attributes["rank"]
            {
                items[sku] = (title, rank)
            }
        }
        return items
    }

    @Test func savesWaitingTogetherCommitInOneTransactionWithATokenEach() async throws {
        try await Self.withStore { store in
            let before = store.saves.counts.committedGroups
            let gate = WriterGate(store)
            let saves = try await Self.queueInserts(store, (0..<20).map { ("t\($0)", "S\($0)") })
            gate.release()
            var tokens: [Int64] = []
            for save in saves {
                let result = try await save.value
                #expect(result.remappedIdentifiers.count == 1)
                tokens.append(try #require(result.token).rawValue)
            }
            #expect(store.saves.counts.committedGroups == before + 1, "the 20 saves were not committed as one group")
            // One history transaction per save, in the order they ran: 20 consecutive tokens.
            #expect(Set(tokens).count == 20)
            #expect(tokens.max()! - tokens.min()! == 19)
            let history = try await store.history(after: nil, limit: nil)
            #expect(history.count == 20)
            #expect(history.allSatisfy { $0.changes.count == 1 && $0.changes[0].kind == .insert })
            #expect(
                try await Self.items(store).mapValues(\.title)
                    == Dictionary(
                        uniqueKeysWithValues: (0..<20).map { ("S\($0)", "t\($0)") }))
        }
    }

    /// A group notifies followers once, of its last token (they read all history after what
    /// they read last), and its saves' tokens come from the group's memo without a wait each; a
    /// save alone notifies of its own token.
    @Test(.timeLimit(.minutes(3))) func aGroupNotifiesFollowersOnceOfItsLastToken() async throws {
        try await Self.withStore { store in
            let other = try await PostgresStore.open(url: store.endpoint.url)
            let (followed, listening) = await FollowedTokens.follow(other)
            #expect(listening, "the follower never listened")
            let gate = WriterGate(store)
            let saves = try await Self.queueInserts(store, (0..<8).map { ("n\($0)", "N\($0)") })
            gate.release()
            var tokens: [Int64] = []
            for save in saves { tokens.append(try #require(try await save.value.token).rawValue) }
            #expect(tokens.max()! - tokens.min()! == 7, "\(tokens)")
            let alone = try #require(try await store.save(Self.insertItem(store, title: "alone", sku: "A")).token)
            var notified: [Int64] = []
            for await token in followed.tokens {
                notified.append(token)
                if token == alone.rawValue { break }
            }
            #expect(notified == [tokens.max()!, alone.rawValue])
            let history = try await store.history(after: nil, limit: nil)
            #expect(history.map(\.token.rawValue) == tokens.sorted() + [alone.rawValue])
            followed.stop()
            await other.close()
        }
    }

    /// A save of a group whose row only the server refuses (PostgreSQL's text holds no NUL
    /// character) fails alone, saying why: each save waits for its own statements before the
    /// next begins, so its failure is not thrown by the next save, nor by the COMMIT.
    @Test func aSaveTheServerRefusesInAGroupFailsAlone() async throws {
        try await Self.withStore { store in
            let gate = WriterGate(store)
            let saves = try await Self.queueInserts(store, [("one", "S1"), ("t\u{0}wo", "S2"), ("three", "S3")])
            gate.release()
            var outcomes: [String] = []
            for save in saves {
                switch await save.result {
                case .success: outcomes.append("saved")
                case .failure(let error as ModelError): outcomes.append("\(error.code)")
                case .failure(let error): outcomes.append("\(error)")
                }
            }
            #expect(outcomes == ["saved", "invalidArgument", "saved"])
            #expect(try await Self.items(store).mapValues(\.title) == ["S1": "one", "S3": "three"])
        }
    }

    /// Two saves of a group break a unique constraint an earlier save of the group set: the
    /// first aborts the transaction (the saves before it run again, in savepoints), the second
    /// is undone to its savepoint. Each fails alone; the other three commit, in one COMMIT.
    @Test func failingSavesInAGroupFailAlone() async throws {
        try await Self.withStore { store in
            let before = store.saves.counts.committedGroups
            let gate = WriterGate(store)
            let plan = [("first", "S1"), ("clash", "S1"), ("middle", "S2"), ("clash again", "S2"), ("last", "S3")]
            let saves = try await Self.queueInserts(store, plan)
            gate.release()
            var tokens: [Int64] = []
            for (save, (title, _)) in zip(saves, plan) {
                if title.hasPrefix("clash") {
                    let error = await modelError { _ = try await save.value }
                    #expect(error?.code == .uniqueConstraint, "\(title): \(String(describing: error))")
                } else {
                    tokens.append(try #require(try await save.value.token).rawValue)
                }
            }
            #expect(store.saves.counts.committedGroups == before + 1)
            #expect(tokens == tokens.sorted() && tokens.max()! - tokens.min()! == 2, "tokens \(tokens)")
            #expect(try await Self.items(store).mapValues(\.title) == ["S1": "first", "S2": "middle", "S3": "last"])
            #expect(try await store.history(after: nil, limit: nil).count == 3)
        }
    }

    /// A group reads each key sequence once and writes it back once before it commits
    /// (``GroupMemo``): around saves that fail in the group, the others' keys are
    /// consecutive, and the next save, alone or through another opener (another daemon), goes on
    /// from the group's last key.
    @Test func aGroupsKeysGoOnFromItsLastSave() async throws {
        let url = try PostgresServer.freshStoreURL()
        let store = try await PostgresStore.open(url: url, applying: Catalog.schema)
        let other = try await PostgresStore.open(url: url, applying: Catalog.schema)
        let gate = WriterGate(store)
        let plan = [("a", "S1"), ("clash", "S1"), ("b", "S2"), ("clash again", "S2"), ("c", "S3")]
        let saves = try await Self.queueInserts(store, plan)
        gate.release()
        var keys: [Int64] = []
        for (save, (title, _)) in zip(saves, plan) where !title.hasPrefix("clash") {
            keys.append(try #require(try await save.value.remappedIdentifiers.values.first?.primaryKey))
        }
        for save in saves { _ = try? await save.value }
        #expect(keys.count == 3 && keys[1] == keys[0] + 1 && keys[2] == keys[0] + 2, "keys \(keys)")
        let elsewhere = try await other.save(Self.insertItem(other, title: "d", sku: "S4"))
        #expect(elsewhere.remappedIdentifiers.values.first?.primaryKey == keys[2] + 1)
        let alone = try await store.save(Self.insertItem(store, title: "e", sku: "S5"))
        #expect(alone.remappedIdentifiers.values.first?.primaryKey == keys[2] + 2)
        await other.close()
        await store.close()
    }

    /// Upserts of one unique value in one group: the first inserts, each later one finds the
    /// object the group's earlier saves left and updates it.
    @Test func upsertsInAGroupUpdateTheObjectAnEarlierSaveOfItInserted() async throws {
        try await Self.withStore { store in
            let gate = WriterGate(store)
            var saves: [Task<SaveResult, any Error>] = []
            for rank in 1...4 {
                saves.append(
                    Task {
                        try await store.save(
                            Self.insertItem(store, title: "u\(rank)", sku: "U", rank: Int64(rank), policy: .upsert))
                    })
                let queued = await waitUntilQueued(store.saves, atLeast: rank)
                #expect(queued >= rank)
            }
            gate.release()
            var ids: Set<PersistentIdentifier> = []
            for save in saves { ids.formUnion(try await save.value.remappedIdentifiers.values) }
            #expect(ids.count == 1, "the upserts made \(ids.count) objects")
            let items = try await Self.items(store)
            #expect(items.count == 1 && items["U"]?.title == "u4" && items["U"]?.rank == 4)
        }
    }
}
