import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Depth and length limits: `resourceExhausted`, never a stack overflow.
@Suite struct PredicateParserLimitTests {
    static func expectExhausted(
        _ text: @autoclosure () -> String, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let text = text()
        do {
            _ = try PredicateParser.parse(text)
            Issue.record("\(label) parsed", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .resourceExhausted, "\(label): \(error.message)", sourceLocation: sourceLocation)
        }
    }

    @Test func hugeNestingFailsWithoutRecursingDeeply() {
        let n = 100_000
        Self.expectExhausted(String(repeating: "(", count: n), "100,000 '('")
        Self.expectExhausted(
            String(repeating: "(", count: n) + "a == 1" + String(repeating: ")", count: n), "balanced parentheses")
        Self.expectExhausted(
            "a == " + String(repeating: "(", count: n) + "1" + String(repeating: ")", count: n), "value parentheses")
        Self.expectExhausted(String(repeating: "NOT ", count: n) + "a == 1", "NOT chain")
        Self.expectExhausted(String(repeating: "!", count: n) + "a == 1", "! chain")
        Self.expectExhausted("a == " + String(repeating: "1 + ", count: n) + "1", "arithmetic chain")
        Self.expectExhausted("a == " + String(repeating: "1 * ", count: n) + "1", "product chain")
        Self.expectExhausted(String(repeating: "SUBQUERY(a, $v, ", count: n / 16), "SUBQUERY nesting")
        Self.expectExhausted(
            String(repeating: "NOT (", count: n / 5) + "a == 1" + String(repeating: ")", count: n / 5), "NOT ( nesting")
        Self.expectExhausted(
            "a == " + String(repeating: "(1 + ", count: n / 5) + "1" + String(repeating: ")", count: n / 5),
            "nested arithmetic")
    }

    @Test func deepBracesFail() throws {
        let error = try #require(throws: ModelError.self) {
            try PredicateParser.parse("a IN " + String(repeating: "{", count: 100_000))
        }
        #expect(error.message.contains("lists cannot be nested"))
    }

    /// A flat chain is not deep: 50,001 comparisons joined by AND make one `.and`.
    @Test func longFlatChainsParse() throws {
        let text = Array(repeating: "a == 1", count: 50_001).joined(separator: " AND ")
        guard case .and(let parts) = try PredicateParser.parse(text) else {
            Issue.record("expected one AND")
            return
        }
        #expect(parts.count == 50_001)
        let or = Array(repeating: "(a == 1 OR b == 2)", count: 5_000).joined(separator: " || ")
        guard case .or(let orParts) = try PredicateParser.parse(or) else {
            Issue.record("expected one OR")
            return
        }
        #expect(orParts.count == 10_000)
    }

    /// The parser's limit is the typer's: a tree the parser accepts is never too deep to type.
    @Test func depthLimitMatchesTheTyper() throws {
        let schema = try ResolvedSchema(Catalog.schema)
        let item = try schema.entity("Item")
        // A comparison is 2 levels (predicate, operands); each NOT adds one.
        let deepest = Predicate.maximumDepth - 2
        let accepted = try PredicateParser.parse(String(repeating: "NOT ", count: deepest) + "rank == 1")
        _ = try accepted.typed(for: item, in: schema)
        #expect(try PredicateParser.parse(accepted.description) == accepted)

        Self.expectExhausted(String(repeating: "NOT ", count: deepest + 1) + "rank == 1", "one NOT too many")
        var tooDeep = Predicate.equal("rank", .int(1))
        for _ in 0...deepest { tooDeep = .not(tooDeep) }
        let typerError = try #require(throws: ModelError.self) { try tooDeep.typed(for: item, in: schema) }
        #expect(typerError.code == .resourceExhausted)

        // Arithmetic: each operator adds a level.
        let sum = "rank == " + String(repeating: "1 + ", count: deepest) + "1"
        _ = try PredicateParser.parse(sum).typed(for: item, in: schema)
        Self.expectExhausted("rank == " + String(repeating: "1 + ", count: deepest + 1) + "1", "one + too many")

        // Nested junctions alternate AND and OR; each level adds one.
        var text = "rank == 1"
        for level in 0..<deepest { text = "(\(text) \(level % 2 == 0 ? "AND" : "OR") rank == 2)" }
        let junctions = try PredicateParser.parse(text)
        _ = try junctions.typed(for: item, in: schema)
        #expect(try PredicateParser.parse(junctions.description) == junctions)
        Self.expectExhausted("(\(text) AND rank == 3) OR rank == 4", "one junction too many")

        // SUBQUERY: at most Predicate.maximumSubqueryNesting inside one another, each adding to
        // its predicate's depth.
        func subqueries(_ count: Int) -> String {
            // From Author: books, then each Book's authors, each Author's books…
            var subquery = "$s0.@entity != \"x\""
            for level in 1...count {
                let depthFromTop = count - level
                let collection = (depthFromTop % 2 == 0 ? "books" : "authors")
                let source = level == count ? collection : "$s\(level).\(collection)"
                subquery = "SUBQUERY(\(source), $s\(level - 1), \(subquery)).@count > 0"
            }
            return subquery
        }
        let author = try schema.entity("Author")
        let allowed = try PredicateParser.parse(subqueries(Predicate.maximumSubqueryNesting))
        _ = try allowed.typed(for: author, in: schema)
        #expect(try PredicateParser.parse(allowed.description) == allowed)
        let five = try PredicateParser.parse(subqueries(Predicate.maximumSubqueryNesting + 1))
        let nestedError = try #require(throws: ModelError.self) { try five.typed(for: author, in: schema) }
        #expect(
            nestedError.code == .resourceExhausted
                && nestedError.message.contains("SUBQUERYs are nested more than 4 deep"))
        var tooManySubqueries = "a == 1"
        for _ in 0..<22 { tooManySubqueries = "SUBQUERY(items, $i, \(tooManySubqueries)).@count > 0" }
        Self.expectExhausted(tooManySubqueries, "22 nested SUBQUERYs")
    }

    @Test func redundantParenthesesAreToleratedUpToALimit() throws {
        let forty = String(repeating: "(", count: 40) + "a == 1" + String(repeating: ")", count: 40)
        #expect(try PredicateParser.parse(forty) == .equal("a", .int(1)))
        Self.expectExhausted(
            String(repeating: "(", count: 60) + "a == 1" + String(repeating: ")", count: 60), "60 parentheses")
    }

    @Test func lengthLimit() throws {
        let limit = PredicateParser.maximumLength
        #expect(limit == 1_048_576)
        let prefix = "name == \""
        let body = limit - prefix.utf8.count - 1
        let exact = prefix + String(repeating: "é", count: body / 2) + String(repeating: "a", count: body % 2) + "\""
        #expect(exact.utf8.count == limit)
        guard case .comparison(let c) = try PredicateParser.parse(exact), case .literal(.string(let s)) = c.rhs else {
            Issue.record("expected a comparison with a string")
            return
        }
        #expect(s.utf8.count == limit - prefix.utf8.count - 1)
        let error = try #require(throws: ModelError.self) { try PredicateParser.parse(exact + " ") }
        #expect(error.code == .resourceExhausted)
        #expect(error.context["length"] == String(limit + 1))
        #expect(error.message.contains("1 MiB"))
    }

    @Test func listLimit() throws {
        let items = Predicate.maximumListCount
        let full = "a IN {" + Array(repeating: "1", count: items).joined(separator: ",") + "}"
        guard case .comparison(let c) = try PredicateParser.parse(full), case .list(let values) = c.rhs else {
            Issue.record("expected a list")
            return
        }
        #expect(values.count == items)
        Self.expectExhausted(
            "a IN {" + Array(repeating: "1", count: items + 1).joined(separator: ",") + "}", "list too long")
    }
}

/// The deepest nesting the parser allows fits in a small stack, so no thread can overflow on it.
@Suite struct PredicateParserStackTests {
    @Test func deepestNestingFitsInASmallStack() async throws {
        let stackSize = 256 * 1024
        let inputs = [
            String(repeating: "(", count: 100_000),
            "a == " + String(repeating: "(1 + ", count: 1_000) + "1" + String(repeating: ")", count: 1_000),
            String(repeating: "SUBQUERY(a, $v, ", count: 1_000),
            "a IN {" + String(repeating: "(", count: 1_000),
            String(repeating: "(", count: 47) + "a == 1" + String(repeating: ")", count: 47),
        ]
        let codes: [ModelError.Code?] = await withCheckedContinuation { continuation in
            let thread = Thread {
                let codes = inputs.map { (text) -> ModelError.Code? in
                    do throws(ModelError) {
                        _ = try PredicateParser.parse(text)
                        return nil
                    } catch {
                        return error.code
                    }
                }
                continuation.resume(returning: codes)
            }
            thread.stackSize = stackSize
            thread.start()
        }
        #expect(codes == [.resourceExhausted, .resourceExhausted, .resourceExhausted, .resourceExhausted, nil])
    }
}
