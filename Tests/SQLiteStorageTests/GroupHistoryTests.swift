import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// A group's history rows are kept in its memo and written together before it commits
/// (``DeferredHistoryWriter``, statements of 32, 16 … 1 rows). What it writes must be what its
/// saves write one by one.
@Suite struct GroupHistoryTests {
    /// 45 saves in one group (inserts of one and of two objects, updates, deletes, with and
    /// without an author: rows of every column, in statements of several sizes) and the same 45
    /// saves made one at a time on a second store: the same tokens, and the same history.
    @Test func aGroupWritesTheHistoryItsSavesWouldWriteAlone() async throws {
        try await withStore(Catalog.schema) { grouped, _ in
            try await withStore(Catalog.schema) { alone, _ in
                // Each store's seeds: the same keys, in stores of their own.
                var seeds: [[PersistentIdentifier]] = [[], []]
                for (side, store) in [grouped, alone].enumerated() {
                    for n in 0..<10 {
                        let result = try await store.save(GroupCommitTests.insertItem(store, title: "seed \(n)"))
                        seeds[side].append(try #require(result.remappedIdentifiers.values.first))
                    }
                }
                let start = try await grouped.currentHistoryToken()
                #expect(start == (try await alone.currentHistoryToken()))

                let before = grouped.saves.counts.committedGroups
                let gate = GroupCommitTests.WriterGate(grouped)
                var tasks: [Task<SaveResult, any Error>] = []
                for index in 0..<45 {
                    let changes = Self.save(index, in: grouped, seeds: seeds[0])
                    tasks.append(Task { try await grouped.save(changes) })
                    try await GroupCommitTests.waitUntilQueued(grouped, tasks.count)
                }
                gate.release()
                var groupedTokens: [HistoryToken?] = []
                for task in tasks { groupedTokens.append(try await task.value.token) }
                #expect(grouped.saves.counts.committedGroups == before + 1, "the 45 saves were not one group")

                var aloneTokens: [HistoryToken?] = []
                for index in 0..<45 {
                    aloneTokens.append(try await alone.save(Self.save(index, in: alone, seeds: seeds[1])).token)
                }
                #expect(groupedTokens == aloneTokens)
                #expect(groupedTokens.allSatisfy { $0 != nil })

                let groupedHistory = try await grouped.history(after: start, limit: nil).map(Self.described)
                let aloneHistory = try await alone.history(after: start, limit: nil).map(Self.described)
                #expect(groupedHistory.count == 45)
                #expect(groupedHistory == aloneHistory)
                #expect(try await grouped.integrityCheck() == ["ok"])
            }
        }
    }

    /// The `index`th save: an insert (of two objects every third one), an update of a seed, or
    /// the delete of a seed updated earlier in the run; every other one has an author.
    static func save(_ index: Int, in store: SQLiteStore, seeds: [PersistentIdentifier]) -> ChangeSet {
        var changes: ChangeSet
        switch index % 5 {
        case 1 where index / 5 < seeds.count:
            changes = ChangeSet(
                updates: [UpdatedObject(id: seeds[index / 5], attributes: ["title": .string("renamed \(index)")])])
        case 3 where index / 5 < seeds.count:
            changes = ChangeSet(deletes: [DeletedObject(id: seeds[index / 5])])
        default:
            changes = GroupCommitTests.insertItem(store, title: "new \(index)")
            if index % 3 == 0 {
                changes.inserts += GroupCommitTests.insertItem(store, title: "new \(index)b").inserts
            }
        }
        changes.author = index % 2 == 0 ? "author \(index)" : nil
        return changes
    }

    /// A transaction as two stores can agree on: not its timestamp, nor its objects' store.
    static func described(_ transaction: HistoryTransaction) -> String {
        let changes = transaction.changes.map { change in
            "\(change.kind) \(change.id.entityName)/\(change.id.primaryKey ?? -1) \(change.changedProperties) "
                + "\(change.tombstone.sorted { $0.key < $1.key })"
        }
        return "\(transaction.token.rawValue) \(transaction.author ?? "-") \(transaction.user ?? "-") \(changes)"
    }
}
