import Foundation
import ModelCore
import ModelFixtures
import Testing

/// The deepest predicates the limits allow (Predicate.maximumDepth, maximumSubqueryNesting) run
/// on every backend: SQLite's parser, whose fixed stack set the limits, takes what they let through.
@Suite struct DeepPredicateTests {
    static let shapes: [(String, @Sendable (Int) -> String)] = [
        (
            "NOT, AND, OR",
            { d in
                (0..<d).reduce("title == \"a\"") { p, i in
                    i % 3 == 0 ? "NOT (\(p))" : i % 3 == 1 ? "(\(p) AND price > 0)" : "(\(p) OR count > 1)"
                }
            }
        ),
        (
            "AND and OR",
            { d in
                (0..<d).reduce("title == \"a\"") { p, i in i % 2 == 0 ? "(\(p) AND price > 0)" : "(\(p) OR count > 1)" }
            }
        ),
        ("arithmetic", { d in (0..<d).reduce("price") { p, i in i % 2 == 0 ? "(\(p) + 1)" : "(\(p) * 2)" } + " > 0" }),
        (
            "4 SUBQUERYs around AND and OR",
            { d in
                (0..<Predicate.maximumSubqueryNesting).reduce(
                    (0..<d).reduce("$v0.title == \"a\"") { p, i in
                        i % 2 == 0 ? "(\(p) AND $v0.price > 0)" : "(\(p) OR count > 1)"
                    }
                ) { p, i in
                    "SUBQUERY(\(i == Predicate.maximumSubqueryNesting - 1 ? "shelf" : "$v\(i + 1).shelf").items, $v\(i), \(p)).@count >= 0"
                }
            }
        ),
        (
            "ANY inside SUBQUERYs",
            { d in
                (0..<Predicate.maximumSubqueryNesting).reduce(
                    (0..<d).reduce("ANY $v0.shelf.items.title == \"a\"") { p, i in
                        i % 2 == 0 ? "(\(p) AND NOT (price > 0))" : "(\(p) OR count > 1)"
                    }
                ) { p, i in
                    "SUBQUERY(\(i == Predicate.maximumSubqueryNesting - 1 ? "shelf" : "$v\(i + 1).shelf").items, $v\(i), \(p)).@count >= 0"
                }
            }
        ),
    ]

    /// Wide junctions, within every limit: SQLite parses a chain of n terms n deep and refused
    /// one of 998 (its expression depth is at most 1,000) until the compiler grouped them.
    @Test(arguments: BackendKind.allCases)
    func junctionsOfThousandsOfTermsRun(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            for index in 0..<3 {
                c.insert("Item", ["title": .string(index == 0 ? "a" : "b"), "count": .int(Int64(index))])
            }
            try await store.save(c)
            func count(_ text: String) async throws -> Int {
                let result = try await store.backend.fetch(
                    FetchDescriptor(entityName: "Item", predicate: try PredicateParser.parse(text), resultType: .count))
                guard case .count(let count) = result else { throw ModelError(.invalidArgument, "not a count") }
                return count
            }
            let terms = 3_000
            let everything = (1...terms).map { "count != -\($0)" }.joined(separator: " AND ")
            #expect(try await count(everything) == 3)
            let oneOfThem = (1...terms).map { "count == -\($0)" }.joined(separator: " OR ") + " OR title == \"a\""
            #expect(try await count(oneOfThem) == 1)
            let nothing = (1...terms).map { "count == \($0 + 10)" }.joined(separator: " OR ")
            #expect(try await count(nothing) == 0)
            // Past the SQL stores' 4,096 values, a clear refusal before anything is prepared
            // (SQLite's preparing grows with the square of a statement's values); a long list in
            // IN is one value.
            let tooMany = (1...5_000).map { "count != -\($0)" }.joined(separator: " AND ")
            if kind == .memory {
                #expect(try await count(tooMany) == 3)
            } else {
                await #expect(throws: ModelError.self) {
                    do {
                        _ = try await count(tooMany)
                    } catch let error as ModelError {
                        #expect(error.code == .resourceExhausted && error.message.contains("at most 4096"), "\(error)")
                        throw error
                    }
                }
            }
            let longList = "count IN {" + (1...50_000).map { "-\($0)" }.joined(separator: ", ") + ", 1}"
            #expect(try await count(longList) == 1)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func theDeepestAllowedPredicatesRun(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let shelf = c.insert("Shelf", ["name": .string("s")])
            for index in 0..<3 {
                let item = c.insert(
                    "Item",
                    [
                        "title": .string(index == 0 ? "a" : "b"), "price": .double(Double(index)),
                        "count": .int(Int64(index)),
                    ])
                c.link(item, "shelf", shelf)
            }
            try await store.save(c)
            let schema = try ResolvedSchema(Catalog.schema)
            let item = try schema.entity("Item")
            for (name, shape) in Self.shapes {
                // The deepest this shape may go.
                var deepest = 0
                for depth in 1...Predicate.maximumDepth {
                    guard let predicate = try? PredicateParser.parse(shape(depth)),
                        (try? predicate.typed(for: item, in: schema)) != nil
                    else { break }
                    deepest = depth
                }
                #expect(deepest >= 8, "\(name): only \(deepest) levels")
                let predicate = try PredicateParser.parse(shape(deepest))
                do {
                    _ = try await store.backend.fetch(
                        FetchDescriptor(entityName: "Item", predicate: predicate, resultType: .count))
                } catch {
                    Issue.record("\(kind) cannot run \(name) at \(deepest) levels: \(error)")
                }
            }
        }
    }
}
