import Foundation
import ModelCore
import ModelFixtures
import SQLiteStorage
import Testing

/// History keeps inserts of one entity with consecutive keys, one after another in a save, as
/// one row of the change table (its `count` column): a bulk load writes a row per run, not one
/// per object. Reading history gives back every object, in order, as before.
@Suite struct HistoryRowTests {
    static let schema = Schema(entities: [
        EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
        EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)]),
    ])

    /// Each change of a transaction as `kind Entity/key`.
    static func listed(_ transaction: HistoryTransaction) -> [String] {
        transaction.changes.map { "\($0.kind) \($0.id.entityName)/\($0.id.primaryKey ?? -1)" }
    }

    @Test func runsOfInsertsAreOneRowEachAndReadBackObjectByObject() async throws {
        try await withStore(Self.schema) { store, path in
            // A general save: three notes, two tags, a note. Keys 1-3, 1-2 and 4: three rows.
            let inserts =
                (1...3).map { InsertedObject(id: store.temporary("Note"), attributes: ["text": .string("n\($0)")]) }
                + (1...2).map { InsertedObject(id: store.temporary("Tag"), attributes: ["name": .string("t\($0)")]) }
                + [InsertedObject(id: store.temporary("Note"), attributes: ["text": .string("n4")])]
            let first = try #require(try await store.save(ChangeSet(inserts: inserts)).token)
            // A bulk load's run of 500 notes: one row.
            var run = InsertRun(entityName: "Note", columns: ["text"])
            for index in 0..<500 { run.append(row: [Value.string("bulk \(index)")]) }
            let second = try #require(try await store.saveInsertRuns([run], author: "loader", user: nil)?.token)
            // An update and a delete: a row each, as before.
            var changes = ChangeSet()
            changes.updates = [UpdatedObject(id: store.id("Note", 1), attributes: ["text": .string("edited")])]
            changes.deletes = [DeletedObject(id: store.id("Tag", 2))]
            let third = try #require(try await store.save(changes).token)

            #expect(try rows(in: path, token: first) == 3)
            #expect(try rows(in: path, token: second) == 1)
            #expect(try rows(in: path, token: third) == 2)

            let history = try await store.history(after: nil, limit: nil)
            try #require(history.map(\.token) == [first, second, third])
            #expect(
                Self.listed(history[0]) == [
                    "insert Note/1", "insert Note/2", "insert Note/3", "insert Tag/1", "insert Tag/2", "insert Note/4",
                ])
            #expect(Self.listed(history[1]) == (5...504).map { "insert Note/\($0)" })
            #expect(history[1].author == "loader")
            #expect(Self.listed(history[2]) == ["update Note/1", "delete Tag/2"])
            #expect(history[2].changes[0].changedProperties == ["text"])

            // History read from a token in the middle starts there.
            let later = try await store.history(after: first, limit: 1)
            #expect(later.map(\.token) == [second])
            #expect(later.first?.changes.count == 500)
        }
    }

    @Test func aStoreMadeBeforeRunsGainsTheColumnAndKeepsItsHistory() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("old.sqlite").path
            let store = try await SQLiteStore.open(path: path, applying: Self.schema)
            try await store.insert("Note", [["text": .string("a")], ["text": .string("b")]])
            await store.close()
            // As a store of an earlier modeld: no count column, and a row per object.
            try sqlite(
                path,
                """
                ALTER TABLE _modeld_change DROP COLUMN count; \
                INSERT INTO _modeld_change VALUES ((SELECT max(token) FROM _modeld_change), 2, 'insert', 'Note', 2, \
                NULL, NULL);
                """)

            let reopened = try await SQLiteStore.open(path: path)
            try await reopened.insert("Note", [["text": .string("c")], ["text": .string("d")]])
            let history = try await reopened.history(after: nil, limit: nil)
            #expect(
                history.map(Self.listed) == [["insert Note/1", "insert Note/2"], ["insert Note/3", "insert Note/4"]])
            #expect(try rows(in: path, token: history[0].token) == 2)
            #expect(try rows(in: path, token: history[1].token) == 1)
            #expect(try await reopened.integrityCheck() == ["ok"])
            await reopened.close()
        }
    }

    /// The change table's rows of transaction `token`, counted by the sqlite3 shell.
    private func rows(in path: String, token: HistoryToken) throws -> Int {
        let output = try sqlite(path, "SELECT count(*) FROM _modeld_change WHERE token = \(token.rawValue)")
        return try #require(Int(output.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// Runs `sql` on the file at `path` with the sqlite3 shell; its output.
    @discardableResult
    private func sqlite(_ path: String, _ sql: String) throws -> String {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [path, sql]
        let output = Pipe()
        shell.standardOutput = output
        try shell.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        shell.waitUntilExit()
        try #require(shell.terminationStatus == 0, "sqlite3 failed on \(sql)")
        return String(decoding: data, as: UTF8.self)
    }
}
