import Foundation
import ModelCore
@testable import ModelEngine
import ModelFixtures
import Testing

/// The container's `saveInsertRuns` (what the daemon's `Apply` does with plain inserts): what it
/// writes and answers. That it stores what recording the same inserts would, and refuses what
/// they would be refused for, is ``DirectInsertTests``' `.runs` way.
@Suite struct InsertRunTests {
    /// Runs saved by the container: on SQLite, written straight and answered as runs (no remap
    /// entry per object); elsewhere as inserts. Either way one transaction records each object,
    /// in order, with the keys the answer gives, and the objects hold the runs' values.
    @Test(arguments: BackendKind.allCases)
    func runsAreSavedInOrderInOneTransaction(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: DirectInsertTests.schema) { store in
            var first = InsertRun(entityName: "Entry", columns: ["title"])
            for n in 0..<3 { first.append(row: [.string("t\(n)")]) }
            var second = InsertRun(entityName: "Owner", columns: ["name"])
            second.append(row: [.string("o")])
            var third = InsertRun(entityName: "Entry", columns: ["rank", "title"])
            third.append(row: [.int(9), .string("last")])
            let result = try #require(
                try await store.container.saveInsertRuns(
                    [first, second, third], author: "loader", uniquenessPolicy: .error))
            #expect(result.touchedEntities == ["Entry", "Owner"])
            var remapped = result.remappedIdentifiers
            for run in result.insertedRuns { run.identifiers { remapped[$0] = $1 } }
            // The memory backend saves them as inserts, and answers them as runs as SQLite does
            // (a client that asked for runs gets them from either).
            #expect(result.remappedIdentifiers.isEmpty)
            #expect(result.insertedRuns.map(\.count) == [3, 1, 1])
            #expect(result.insertedRuns.map(\.entityName) == ["Entry", "Owner", "Entry"])
            #expect(result.versions.isEmpty)
            #expect(remapped.count == 5)
            #expect(
                remapped.keys.allSatisfy { $0.isTemporary && $0.storeIdentifier == store.container.storeIdentifier })

            let transaction = try #require(try await store.container.history(after: nil).last)
            #expect(transaction.token == result.token)
            #expect(transaction.author == "loader")
            #expect(
                transaction.changes.map { "\($0.kind) \($0.id.entityName)/\($0.id.primaryKey ?? -1)" } == [
                    "insert Entry/1", "insert Entry/2", "insert Entry/3", "insert Owner/1", "insert Entry/4",
                ])
            #expect(Set(remapped.values) == Set(transaction.changes.map(\.id)))

            let entries = try await store.context().fetch(
                FetchDescriptor(entityName: "Entry", sortBy: [SortDescriptor("title")])
            ).objects
            #expect(
                entries.map { "\($0.attributes["title"]!) \($0.attributes["rank"]!) v\($0.version)" } == [
                    "\(Value.string("last")) \(Value.int(9)) v1", "\(Value.string("t0")) \(Value.int(0)) v1",
                    "\(Value.string("t1")) \(Value.int(0)) v1", "\(Value.string("t2")) \(Value.int(0)) v1",
                ])
        }
    }

    /// A run naming a column that is no attribute of its entity, handed to SQLite's backend
    /// directly (the engine never makes one), is refused rather than saved without it.
    @Test func aColumnOfNoAttributeIsRefusedByTheBackend() async throws {
        try await withStore(.sqlite, schema: DirectInsertTests.schema) { store in
            var run = InsertRun(entityName: "Entry", columns: ["title", "colour"])
            run.append(row: [.string("a"), .string("red")])
            do {
                _ = try await store.container.backend.saveInsertRuns([run], author: nil, user: nil)
                Issue.record("the run was saved")
            } catch let error as ModelError {
                #expect(error.code == .unknownProperty && error.message.contains("colour"), "\(error)")
            }
            #expect(try await store.container.history(after: nil).isEmpty)
        }
    }

    static let measured = Schema(entities: [
        EntityDescription(
            name: "Reading",
            attributes: [
                AttributeDescription(name: "station", type: .string),
                AttributeDescription(name: "count", type: .int, defaultValue: .int(7)),
                AttributeDescription(name: "level", type: .double, isOptional: true),
                AttributeDescription(name: "at", type: .date),
            ])
    ])

    /// A run naming every attribute, in any order, with values already of their types (what a
    /// bulk load sends) is saved as it is, not copied; any other is completed value by value
    /// (converted, given defaults), and one that cannot be is refused, as before.
    @Test func aRunAlreadyCompleteIsSavedAsItIs() async throws {
        try await withStore(.sqlite, schema: Self.measured) { store in
            let at = Value.date(Timestamp(microsecondsSince1970: 1_700_000_000_000_000))
            var exact = InsertRun(entityName: "Reading", columns: ["level", "at", "station", "count"])
            exact.append(row: [.double(1.5), at, .string("north"), .int(3)])
            exact.append(row: [.null, at, .string("south"), .int(4)])
            #expect(store.container.completed(exact) == exact)

            // Each of these needs completing: a negative zero, an int for a double, a missing
            // attribute with a default.
            var negativeZero = InsertRun(entityName: "Reading", columns: ["level", "at", "station", "count"])
            negativeZero.append(row: [.double(-0.0), at, .string("east"), .int(1)])
            let zero = try #require(store.container.completed(negativeZero))
            #expect(zero != negativeZero)
            #expect(zero.row(0)[zero.row(0).startIndex + zero.columns.firstIndex(of: "level")!] == .double(0))
            var intForDouble = InsertRun(entityName: "Reading", columns: ["level", "at", "station", "count"])
            intForDouble.append(row: [.int(2), at, .string("west"), .int(1)])
            let converted = try #require(store.container.completed(intForDouble))
            #expect(converted.row(0)[converted.columns.firstIndex(of: "level")!] == .double(2))
            var missing = InsertRun(entityName: "Reading", columns: ["at", "station"])
            missing.append(row: [at, .string("up")])
            let defaulted = try #require(store.container.completed(missing))
            #expect(defaulted.row(0)[defaulted.columns.firstIndex(of: "count")!] == .int(7))

            // A null for a required attribute, or a string where an int goes that does not
            // read as one: not fit (the general way refuses it, naming the change).
            var nullRequired = InsertRun(entityName: "Reading", columns: ["level", "at", "station", "count"])
            nullRequired.append(row: [.double(1), at, .null, .int(1)])
            #expect(store.container.completed(nullRequired) == nil)
            var wrongType = InsertRun(entityName: "Reading", columns: ["level", "at", "station", "count"])
            wrongType.append(row: [.double(1), at, .string("x"), .string("many")])
            #expect(store.container.completed(wrongType) == nil)
            // An attribute named by two columns (a run names each once): not fit either, rather
            // than one of its values kept.
            var twice = InsertRun(entityName: "Reading", columns: ["level", "at", "station", "station"])
            twice.append(row: [.double(1), at, .string("a"), .string("b")])
            #expect(store.container.completed(twice) == nil)

            _ = try #require(
                try await store.container.saveInsertRuns([exact], author: nil, uniquenessPolicy: .error))
            let saved = try await store.context().fetch(
                FetchDescriptor(entityName: "Reading", sortBy: [SortDescriptor("station")])
            ).objects
            #expect(saved.map { $0.attributes["station"] } == [.string("north"), .string("south")])
            #expect(saved.map { $0.attributes["level"] } == [.double(1.5), .null])
            #expect(saved.map { $0.attributes["count"] } == [.int(3), .int(4)])
            #expect(saved.map { $0.attributes["at"] } == [at, at])
        }
    }

    /// A run that needs completing is handed over completed even when its columns are already
    /// the entity's, in its order, and completing changes no value's equality: a negative zero
    /// becomes zero (`-0.0 == 0.0`, so only the sign tells them apart), and the run is saved.
    @Test func aRunInTheEntitysOrderIsCompleted() async throws {
        try await withStore(.sqlite, schema: Self.measured) { store in
            let at = Value.date(Timestamp(microsecondsSince1970: 1_700_000_000_000_000))
            var run = InsertRun(entityName: "Reading", columns: ["station", "count", "level", "at"])
            run.append(row: [.string("east"), .int(1), .double(-0.0), at])
            guard case .completed(let complete) = store.container.completion(of: run),
                case .double(let level) = complete.row(0)[2]
            else {
                Issue.record("the run was not completed")
                return
            }
            #expect(level == 0 && level.sign == .plus)
            _ = try #require(try await store.container.saveInsertRuns([run], author: nil, uniquenessPolicy: .error))
            #expect(try await store.context().fetch(FetchDescriptor(entityName: "Reading")).objects.count == 1)
        }
    }
}
