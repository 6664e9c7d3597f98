import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import PostgresStorage
import Testing

/// Runs of plain inserts on PostgreSQL (`saveInsertRuns`, what the daemon's `Apply` does with a
/// bulk load): written as multi-row statements, they must leave what saving the same objects as
/// inserts leaves, in a second store: the same keys, values, folded forms and history.
@Suite struct PostgresInsertRunsTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Note",
            attributes: [
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "body", type: .string, isOptional: true),
                AttributeDescription(name: "rank", type: .int, defaultValue: .int(0)),
                AttributeDescription(name: "price", type: .double, isOptional: true),
                AttributeDescription(name: "added", type: .date, isOptional: true),
            ],
            relationships: [RelationshipDescription(name: "owner", destination: "Owner", inverse: "notes")]),
        EntityDescription(
            name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "notes", destination: "Note", isToMany: true)]),
        EntityDescription(
            name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
            uniqueConstraints: [["name"]]),
    ])

    /// Notes enough for several statements of ``parameters`` each, every column of the entity
    /// given (as the engine completes a run), then owners, then one more note.
    static let noteCount = 100
    /// Parameters a statement: 20 rows of a note's 15 columns (3 of the row, 5 attributes, a
    /// foreign key, three folded forms of each string).
    static let parameters = 300
    static func runs() -> [InsertRun] {
        let columns = ["title", "body", "rank", "price", "added"]
        var notes = InsertRun(entityName: "Note", columns: columns)
        for n in 0..<noteCount {
            notes.append(row: [
                .string(String(format: "Note-%05d", n)), n % 3 == 0 ? .null : .string("Crème \(n)"),
                .int(Int64(n % 11)),
                .double(Double(n) / 4), .date(Timestamp(microsecondsSince1970: 1_767_225_600_000_000 + Int64(n))),
            ])
        }
        var owners = InsertRun(entityName: "Owner", columns: ["name"])
        for name in ["Ada", "Grace", "Edsger"] { owners.append(row: [.string(name)]) }
        var last = InsertRun(entityName: "Note", columns: columns)
        last.append(row: [.string("last"), .null, .int(0), .null, .null])
        return [notes, owners, last]
    }

    static func withStore(_ body: (PostgresStore) async throws -> Void) async throws {
        try await PostgresSaveTests.withStore(schema: schema, body)
    }

    /// What a store holds: each note and owner with its key, version and values, and its history.
    static func contents(_ store: PostgresStore) async throws -> [String] {
        var lines: [String] = []
        for entity in ["Note", "Owner"] {
            for object in try await store.fetch(FetchDescriptor(entityName: entity)).objects {
                let values = object.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                lines.append("\(entity)/\(object.id.primaryKey ?? -1) v\(object.version) \(values)")
            }
        }
        for transaction in try await store.history(after: nil, limit: nil) {
            lines.append(
                "history \(transaction.author ?? "-") "
                    + transaction.changes.map { "\($0.kind) \($0.id.entityName)/\($0.id.primaryKey ?? -1)" }.joined(
                        separator: ", "))
        }
        return lines.sorted()
    }

    @Test func runsLeaveWhatTheSameInsertsLeave() async throws {
        var fromRuns: [String] = [], fromInserts: [String] = []
        try await Self.withStore { store in
            let result = try #require(
                try await store.saveInsertRuns(
                    Self.runs(), author: "loader", user: "someone", parametersPerStatement: Self.parameters))
            #expect(result.remappedIdentifiers.isEmpty)
            #expect(result.insertedRuns.map(\.count) == [Self.noteCount, 3, 1])
            #expect(result.insertedRuns.map(\.firstKey) == [1, 1, Int64(Self.noteCount) + 1])
            #expect(result.touchedEntities == ["Note", "Owner"])
            let transaction = try #require(try await store.history(after: nil, limit: nil).last)
            #expect(transaction.token == result.token && transaction.user == "someone")
            // Folded forms are written: a case- and diacritic-insensitive match finds the note.
            let found = try await store.fetch(
                FetchDescriptor(entityName: "Note", predicate: try PredicateParser.parse("body ==[cd] \"CREME 7\"")))
            #expect(found.objects.map { $0.attributes["title"] } == [.string("Note-00007")])
            fromRuns = try await Self.contents(store)
        }
        try await Self.withStore { store in
            var changes = ChangeSet(author: "loader", user: "someone")
            for run in Self.runs() {
                for index in 0..<run.count {
                    changes.inserts.append(
                        InsertedObject(
                            id: PersistentIdentifier(
                                storeIdentifier: store.storeIdentifier, entityName: run.entityName,
                                key: .temporary(UUID())),
                            attributes: run.attributes(ofRow: index)))
                }
            }
            _ = try await store.save(changes)
            fromInserts = try await Self.contents(store)
        }
        #expect(fromRuns.count == Self.noteCount + 5)
        #expect(fromRuns == fromInserts)
    }

    /// An entity with a unique constraint is left to the save algorithm (nil), and a column of no
    /// attribute is refused: nothing written either way.
    @Test func uniqueConstraintsAreLeftToTheSaveAlgorithm() async throws {
        try await Self.withStore { store in
            var tags = InsertRun(entityName: "Tag", columns: ["name"])
            tags.append(row: [.string("a")])
            let declined = try await store.saveInsertRuns([tags], author: nil, user: nil)
            #expect(declined == nil)
            // A column of no attribute (the engine never makes one) is refused, not dropped.
            var odd = InsertRun(entityName: "Owner", columns: ["name", "colour"])
            odd.append(row: [.string("a"), .string("red")])
            do {
                _ = try await store.saveInsertRuns([odd], author: nil, user: nil)
                Issue.record("the run was saved")
            } catch let error as ModelError {
                #expect(error.code == .unknownProperty && error.message.contains("colour"), "\(error)")
            }
            let history = try await store.history(after: nil, limit: nil)
            #expect(history.isEmpty)
        }
    }
}
