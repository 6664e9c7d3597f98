import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import SQLiteStorage
import Testing

/// Objects fetches of one plain shape share a compiled statement (``CompiledQueries``), each
/// binding its own values: every fetch answers what the statement compiled for its own values
/// answers; other shapes are compiled every time.
@Suite struct CompiledQueriesTests {
    static let epoch = Timestamp(microsecondsSince1970: 1_767_225_600_000_000)

    static func vehicle(_ i: Int, in store: SQLiteStore) -> InsertedObject {
        var attributes: [String: Value] = ["name": .string("v\(i % 17)-\(i)")]
        if i % 7 != 0 { attributes["wheels"] = .int(Int64(i % 9)) }
        if i % 5 != 0 { attributes["weight"] = .double(Double(i % 13) / 4) }
        if i % 3 != 0 { attributes["electric"] = .bool(i % 2 == 0) }
        if i % 11 != 0 {
            attributes["built"] = .date(Timestamp(microsecondsSince1970: epoch.microsecondsSince1970 + Int64(i % 10)))
        }
        return InsertedObject(id: store.temporary("Vehicle"), attributes: attributes)
    }

    static func path(_ name: String) -> PropertyPath { PropertyPath([name]) }

    static func compare(_ name: String, _ op: ComparisonOperator, _ value: Value) -> Predicate {
        .comparison(Comparison(.keyPath(path(name)), op, .literal(value)))
    }

    /// Plain shapes, each made with values drawn from `random`.
    static let shapes: [@Sendable (inout SeededRandom) -> FetchDescriptor] = [
        { random in
            FetchDescriptor(
                entityName: "Vehicle", predicate: compare("wheels", .greaterOrEqual, .int(Int64(random.int(0...9)))),
                sortBy: [SortDescriptor(path("wheels")), SortDescriptor(path("name"))], limit: random.int(0...8))
        },
        { random in
            FetchDescriptor(
                entityName: "Vehicle",
                predicate: .or([
                    .and([
                        compare("weight", .less, .double(Double(random.int(0...13)) / 4)),
                        compare("electric", .equal, .bool(random.chance(0.5))),
                    ]),
                    compare("name", .equal, .string("v\(random.int(0...16))-\(random.int(0...60))")),
                ]),
                sortBy: [SortDescriptor(path("name"), ascending: false)], offset: random.int(0...3),
                limit: random.int(1...10))
        },
        { random in
            FetchDescriptor(
                entityName: "Vehicle",
                predicate: .not(
                    compare(
                        "built", .greater,
                        .date(Timestamp(microsecondsSince1970: epoch.microsecondsSince1970 + Int64(random.int(0...10))))
                    )),
                sortBy: [SortDescriptor(path("built")), SortDescriptor(path("name"))], offset: random.int(1...20))
        },
        { random in
            var descriptor = FetchDescriptor(
                entityName: "Vehicle",
                predicate: .and([
                    compare("name", .lessOrEqual, .string("v\(random.int(0...16))")),
                    compare("wheels", .notEqual, .int(Int64(random.int(0...9)))),
                    .constant(random.chance(0.8)),
                ]),
                sortBy: [SortDescriptor(path("name"))])
            descriptor.propertiesToFetch = ["name", "wheels"]
            return descriptor
        },
    ]

    /// Each shape fetched with many values: a fetch finds its shape kept when the fetch before
    /// had the same, and every fetch answers the objects of the statement compiled afresh for
    /// its values.
    @Test func fetchesOfAKeptShapeAnswerWhatTheirOwnStatementAnswers() async throws {
        try await withStore(ReadRowsWithoutWaitingTests.schema) { store, _ in
            _ = try await store.save(ChangeSet(inserts: (1...120).map { Self.vehicle($0, in: store) }))
            let queries = try await store.layout().compiledQueries
            var random = SeededRandom(seed: 0x5EED_C0DE)
            var nonEmpty = 0, hits = 0
            for (index, shape) in Self.shapes.enumerated() {
                queries.removeAll()
                // The shape the last round left kept (its offset, limit and constants may differ).
                var last: FetchShape?
                for round in 0..<12 {
                    let descriptor = shape(&random)
                    var literals: [Value] = []
                    let key = try #require(FetchShape(descriptor, literals: &literals), "shape \(index)")
                    let kept = queries.query(for: key, literals: literals, descriptor: descriptor) != nil
                    #expect(kept == (key == last), "shape \(index), round \(round): \(descriptor)")
                    if kept { hits += 1 }
                    last = key
                    let shared = try await store.fetch(descriptor).objects
                    queries.removeAll()
                    let own = try await store.fetch(descriptor).objects
                    #expect(shared == own, "shape \(index), round \(round): \(descriptor)")
                    #expect(queries.count == 1)
                    if !own.isEmpty { nonEmpty += 1 }
                }
            }
            #expect(nonEmpty > 30 && hits > 20, "non-empty \(nonEmpty), hits \(hits)")
        }
    }

    /// Fetches that are not of a plain shape are compiled each time and never kept.
    @Test func otherShapesAreNotKept() async throws {
        try await withStore(ReadRowsWithoutWaitingTests.schema) { store, _ in
            _ = try await store.save(ChangeSet(inserts: (1...20).map { Self.vehicle($0, in: store) }))
            let queries = try await store.layout().compiledQueries
            let others: [Predicate] = [
                .comparison(Comparison(.keyPath(Self.path("name")), .beginsWith, .literal(.string("v1")))),
                .comparison(
                    Comparison(
                        .keyPath(Self.path("name")), .equal, .literal(.string("V1-1")), options: .caseInsensitive)),
                .comparison(
                    Comparison(.keyPath(Self.path("wheels")), .in, .list([.literal(.int(1)), .literal(.int(2))]))),
                Self.compare("wheels", .equal, .null),
                .comparison(
                    Comparison(
                        .keyPath(Self.path("wheels")), .greater,
                        .arithmetic(.add, .literal(.int(1)), .literal(.int(2))))),
            ]
            for predicate in others {
                let descriptor = FetchDescriptor(entityName: "Vehicle", predicate: predicate)
                var literals: [Value] = []
                #expect(FetchShape(descriptor, literals: &literals) == nil, "\(predicate)")
                _ = try await store.fetch(descriptor)
            }
            var counted = FetchDescriptor(entityName: "Vehicle", predicate: Self.compare("wheels", .less, .int(4)))
            counted.resultType = .count
            _ = try await store.fetch(counted)
            #expect(queries.count == 0)
        }
    }
}
