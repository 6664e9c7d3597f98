import Dispatch
import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// Group commit: saves that wait for the writer together run in one transaction, each in a
/// savepoint, and each still succeeds or fails on its own. The writer is held by a blocking job
/// while the saves queue, so every test knows which saves form the group.
@Suite struct GroupCommitTests {
    /// Holds the store's writer until `release()`: saves queue behind it.
    final class WriterGate: Sendable {
        private let gate = DispatchSemaphore(value: 0)

        init(_ store: SQLiteStore) {
            store.writer.submit { [gate] _ in gate.wait() }
        }

        func release() { gate.signal() }
    }

    /// Waits until `count` saves wait for the next group (they are queued from other tasks).
    static func waitUntilQueued(_ store: SQLiteStore, _ count: Int) async throws {
        let queued = await ModelFixtures.waitUntilQueued(store.saves, atLeast: count)
        #expect(queued >= count, "only \(queued) of \(count) saves queued")
    }

    static func insertItem(_ store: SQLiteStore, title: String, sku: String? = nil) -> ChangeSet {
        var attributes: [String: Value] = ["title": .string(title)]
        if let sku { attributes["sku"] = .string(sku) }
        return ChangeSet(inserts: [InsertedObject(id: store.temporary("Item"), attributes: attributes)])
    }

    static func titles(_ store: SQLiteStore) async throws -> Set<String> {
        Set(
            try await store.objects("Item").compactMap {
                if case .string(let title) = $0["title"] { title } else { nil }
            })
    }

    @Test func savesWaitingTogetherCommitInOneGroupWithATokenEach() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let before = store.saves.counts.committedGroups
            let gate = WriterGate(store)
            let saves = (0..<20).map { n in Task { try await store.save(Self.insertItem(store, title: "t\(n)")) } }
            try await Self.waitUntilQueued(store, 20)
            gate.release()
            var tokens: [Int64] = []
            for save in saves {
                let result = try await save.value
                #expect(result.remappedIdentifiers.count == 1)
                tokens.append(try #require(result.token).rawValue)
            }
            #expect(store.saves.counts.committedGroups == before + 1, "the 20 saves were not committed as one group")
            // One history transaction per save, in the order they ran: 20 consecutive tokens.
            let sorted = tokens.sorted()
            #expect(Set(tokens).count == 20)
            #expect(sorted.last! - sorted.first! == 19)
            let history = try await store.history(after: nil, limit: nil)
            #expect(history.count == 20)
            #expect(history.allSatisfy { $0.changes.count == 1 && $0.changes[0].kind == .insert })
            #expect(try await Self.titles(store) == Set((0..<20).map { "t\($0)" }))
        }
    }

    /// A save that breaks a unique constraint set by an earlier save of its own group fails
    /// alone; the saves before and after it commit.
    @Test func aFailingSaveInAGroupFailsAlone() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let gate = WriterGate(store)
            let first = Task { try await store.save(Self.insertItem(store, title: "first", sku: "S1")) }
            try await Self.waitUntilQueued(store, 1)
            let clash = Task { try await store.save(Self.insertItem(store, title: "clash", sku: "S1")) }
            try await Self.waitUntilQueued(store, 2)
            let last = Task { try await store.save(Self.insertItem(store, title: "last", sku: "S2")) }
            try await Self.waitUntilQueued(store, 3)
            gate.release()
            #expect(try await first.value.token != nil)
            let error = await modelError { _ = try await clash.value }
            #expect(error?.code == .uniqueConstraint, "\(String(describing: error))")
            #expect(try await last.value.token != nil)
            #expect(try await Self.titles(store) == ["first", "last"])
            #expect(try await store.history(after: nil, limit: nil).count == 2)
        }
    }

    /// Around a save that fails in its group (its unique constraint refused before it takes a
    /// key), the others' keys and tokens are consecutive, and the next save, in this process or
    /// after the store is opened again, goes on from there (the group wrote its sequences back).
    @Test func aGroupsSequencesGoOnFromItsLastSave() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store.sqlite").path
            let store = try await openStore(path, schema: Catalog.schema)
            let gate = WriterGate(store)
            var tasks: [Task<SaveResult, any Error>] = []
            for (title, sku) in [("a", "S1"), ("clash", "S1"), ("b", "S2"), ("c", "S3")] {
                tasks.append(Task { try await store.save(Self.insertItem(store, title: title, sku: sku)) })
                try await Self.waitUntilQueued(store, tasks.count)
            }
            gate.release()
            var results: [SaveResult] = []
            for (index, task) in tasks.enumerated() {
                if index == 1 {
                    let error = await modelError { _ = try await task.value }
                    #expect(error?.code == .uniqueConstraint, "\(String(describing: error))")
                } else {
                    results.append(try await task.value)
                }
            }
            let keys = results.map { $0.remappedIdentifiers.values.first?.primaryKey }
            let tokens = try results.map { try #require($0.token).rawValue }
            #expect(keys == [1, 2, 3])
            #expect(tokens == [tokens[0], tokens[0] + 1, tokens[0] + 2])
            let alone = try await store.save(Self.insertItem(store, title: "d"))
            #expect(alone.remappedIdentifiers.values.first?.primaryKey == 4)
            #expect(alone.token?.rawValue == tokens[0] + 3)
            await store.close()

            let reopened = try await openStore(path)
            let after = try await reopened.save(Self.insertItem(reopened, title: "e"))
            #expect(after.remappedIdentifiers.values.first?.primaryKey == 5)
            #expect(after.token?.rawValue == tokens[0] + 4)
            #expect(try await Self.titles(reopened) == ["a", "b", "c", "d", "e"])
            await reopened.close()
        }
    }

    /// Within a group, sequences are read and set in memory and written back once, when the
    /// group commits (``GroupMemo``); a save undone in the group takes back what it set, so the
    /// saves after it go on from the value before it, and the table ends at the last one's.
    /// The group's first failure rolls it back and runs the rest in savepoints; the second is
    /// undone by its savepoint alone.
    @Test func aSaveUndoneInItsGroupTakesBackTheSequencesItSet() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let gate = WriterGate(store)
            @Sendable func advance(by step: Int64, failing: Bool = false) -> SaveBatcher.Work {
                { connection in
                    let value = try StoreMetadata.sequence("probe", connection)
                    try StoreMetadata.setSequence("probe", to: value + step, connection)
                    if failing { throw ModelError(.validationFailed, "failing on purpose after setting the sequence") }
                    var result = SaveResult()
                    result.token = HistoryToken(value + step)
                    return result
                }
            }
            var tasks: [Task<SaveResult, any Error>] = []
            for (step, failing) in [(1, false), (100, true), (10, false), (1_000, true), (5, false)] {
                tasks.append(Task { try await store.saves.save(advance(by: Int64(step), failing: failing)) })
                try await Self.waitUntilQueued(store, tasks.count)
            }
            gate.release()
            #expect(try await tasks[0].value.token == HistoryToken(1))
            for failed in [1, 3] {
                let error = await modelError { _ = try await tasks[failed].value }
                #expect(error?.code == .validationFailed)
            }
            #expect(try await tasks[2].value.token == HistoryToken(11))
            #expect(try await tasks[4].value.token == HistoryToken(16))
            // Written back at the commit: a save alone (no memo) reads it from the table.
            let after = try await store.saves.save(advance(by: 0))
            #expect(after.token == HistoryToken(16))
        }
    }

    /// A save cancelled while it waits for its group is dropped: it throws `cancelled` and
    /// writes nothing; the rest of the group commits.
    @Test func aSaveCancelledWhileWaitingIsDropped() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let gate = WriterGate(store)
            let kept = Task { try await store.save(Self.insertItem(store, title: "kept")) }
            try await Self.waitUntilQueued(store, 1)
            let dropped = Task { try await store.save(Self.insertItem(store, title: "dropped")) }
            try await Self.waitUntilQueued(store, 2)
            dropped.cancel()
            let error = await modelError { _ = try await dropped.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(store.saves.counts.queued == 1)
            gate.release()
            #expect(try await kept.value.token != nil)
            #expect(try await Self.titles(store) == ["kept"])
        }
    }

    /// A save that fills the store in the middle of a group fails alone, although SQLite rolls
    /// back the whole transaction: the saves around it still commit, every answer matches what
    /// the store keeps, and the store stays sound and takes the next save.
    @Test func aFullStoreInAGroupFailsOnlyTheSaveThatFillsIt() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.setMaximumFileSize(200 * 1024)
            let big = String(repeating: "x", count: 400_000)
            let gate = WriterGate(store)
            var tasks: [(String, Task<SaveResult, any Error>)] = []
            for title in ["before", big, "after"] {
                tasks.append((title, Task { try await store.save(Self.insertItem(store, title: title)) }))
                try await Self.waitUntilQueued(store, tasks.count)
            }
            gate.release()
            var saved: Set<String> = []
            for (title, task) in tasks {
                let error = await modelError { _ = try await task.value }
                if let error {
                    #expect(error.code == .resourceExhausted, "\(error)")
                } else {
                    saved.insert(title)
                }
            }
            // SQLite rolls the whole transaction back when the store is full: the save before
            // the big one runs again after it, in a new transaction with the one after.
            #expect(saved == ["before", "after"])
            #expect(try await Self.titles(store) == saved)
            #expect(try await store.history(after: nil, limit: nil).count == saved.count)
            #expect(try await store.integrityCheck() == ["ok"])
            _ = try await store.save(Self.insertItem(store, title: "later"))
            #expect(try await Self.titles(store) == saved.union(["later"]))
        }
    }
}
