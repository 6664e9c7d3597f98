import Dispatch
import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Synchronization
import Testing

/// Saves of insert runs submitted with a completion (``SQLiteStore/submitInsertRuns(_:author:user:whenSaved:)``,
/// how the daemon saves a framed `Apply` without a task): they join the groups of saves awaited
/// by tasks, each gets its own result once its group has committed, and one given up while it
/// waits is dropped.
@Suite struct SubmittedSaveTests {
    static let schema = Schema(entities: [
        EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
        EntityDescription(
            name: "Label", attributes: [AttributeDescription(name: "name", type: .string)],
            uniqueConstraints: [["name"]]),
    ])

    static func notes(_ texts: String...) -> [InsertRun] {
        var run = InsertRun(entityName: "Note", columns: ["text"])
        for text in texts { run.append(row: [.string(text)]) }
        return [run]
    }

    /// The results given to completions, and an event once `expected` have come.
    final class Completions: Sendable {
        private let results = Mutex<[String: Result<SaveResult, any Error>]>([:])
        private let expected: Int
        let allCame = TestEvent()

        init(expected: Int) { self.expected = expected }

        func completion(_ name: String) -> @Sendable (Result<SaveResult, any Error>) -> Void {
            { result in
                let count = self.results.withLock {
                    $0[name] = result
                    return $0.count
                }
                if count == self.expected { self.allCame.signal() }
            }
        }

        func result(_ name: String) -> Result<SaveResult, any Error>? { results.withLock { $0[name] } }
    }

    static func texts(_ store: SQLiteStore) async throws -> Set<String> {
        Set(try await store.objects("Note").compactMap { if case .string(let text) = $0["text"] { text } else { nil } })
    }

    @Test func submittedSavesJoinAGroupWithAwaitedOnesAndEachGetsItsOwnResult() async throws {
        try await withStore(Self.schema) { store, _ in
            let before = store.saves.counts.committedGroups
            let gate = GroupCommitTests.WriterGate(store)
            let completions = Completions(expected: 3)
            for n in 0..<3 {
                let giveUp = try store.submitInsertRuns(
                    Self.notes("submitted \(n)", "and \(n)"), author: "loader", user: nil,
                    whenSaved: completions.completion("s\(n)"))
                #expect(giveUp != nil)
            }
            let awaited = Task { try await store.saveInsertRuns(Self.notes("awaited"), author: nil, user: nil) }
            try await GroupCommitTests.waitUntilQueued(store, 4)
            #expect(completions.result("s0") == nil, "a submitted save completed before its group ran")
            gate.release()
            #expect(await completions.allCame.wait(timeout: .seconds(20)))
            let awaitedToken = try #require(try await awaited.value?.token)
            var tokens = [awaitedToken]
            for n in 0..<3 {
                let result = try #require(try completions.result("s\(n)")?.get())
                #expect(result.insertedRuns.map(\.count) == [2])
                tokens.append(try #require(result.token))
            }
            #expect(Set(tokens).count == 4)
            #expect(store.saves.counts.committedGroups == before + 1, "the four saves were not one group")
            #expect(
                try await Self.texts(store)
                    == ["submitted 0", "and 0", "submitted 1", "and 1", "submitted 2", "and 2", "awaited"])
            let history = try await store.history(after: nil, limit: nil)
            #expect(history.filter { $0.author == "loader" }.count == 3)
        }
    }

    @Test func aSubmittedSaveGivenUpWhileItWaitsIsDroppedAndTheOthersCommit() async throws {
        try await withStore(Self.schema) { store, _ in
            let gate = GroupCommitTests.WriterGate(store)
            let completions = Completions(expected: 2)
            _ = try store.submitInsertRuns(
                Self.notes("kept"), author: nil, user: nil, whenSaved: completions.completion("kept"))
            let giveUp = try #require(
                try store.submitInsertRuns(
                    Self.notes("dropped"), author: nil, user: nil, whenSaved: completions.completion("dropped")))
            try await GroupCommitTests.waitUntilQueued(store, 2)
            giveUp()
            // Dropped at once, before the writer is free.
            guard case .failure(let error as ModelError)? = completions.result("dropped") else {
                Issue.record(
                    "the dropped save did not fail at once: \(String(describing: completions.result("dropped")))")
                gate.release()
                return
            }
            #expect(error.code == .cancelled)
            #expect(store.saves.counts.queued == 1)
            gate.release()
            #expect(await completions.allCame.wait(timeout: .seconds(20)))
            #expect(try completions.result("kept")?.get().token != nil)
            // Given up again after it ended: nothing happens.
            giveUp()
            #expect(try await Self.texts(store) == ["kept"])
        }
    }

    /// Where the awaited way would take another path, nothing is submitted: an entity with a
    /// unique constraint (resolved by the general save) or not in the schema. A column that is
    /// no attribute throws the error the awaited way throws.
    @Test func runsTheAwaitedWayWouldNotWriteStraightAreNotSubmitted() async throws {
        try await withStore(Self.schema) { store, _ in
            var labels = InsertRun(entityName: "Label", columns: ["name"])
            labels.append(row: [.string("red")])
            let never: @Sendable (Result<SaveResult, any Error>) -> Void = { _ in Issue.record("completed") }
            let declined = try store.submitInsertRuns([labels], author: nil, user: nil, whenSaved: never)
            #expect(declined == nil)
            let declinedAwaited = try await store.saveInsertRuns([labels], author: nil, user: nil)
            #expect(declinedAwaited == nil)

            let ghosts = InsertRun(entityName: "Ghost", columns: ["name"])
            let ghostsSubmitted = try store.submitInsertRuns([ghosts], author: nil, user: nil, whenSaved: never)
            #expect(ghostsSubmitted == nil)

            var misnamed = InsertRun(entityName: "Note", columns: ["txet"])
            misnamed.append(row: [.string("typo")])
            let submitted = #expect(throws: ModelError.self) {
                try store.submitInsertRuns([misnamed], author: nil, user: nil, whenSaved: never)
            }
            let awaited = await modelError { _ = try await store.saveInsertRuns([misnamed], author: nil, user: nil) }
            #expect(submitted != nil && submitted?.code == awaited?.code && submitted?.message == awaited?.message)
            #expect(store.saves.counts.queued == 0)
        }
    }
}
