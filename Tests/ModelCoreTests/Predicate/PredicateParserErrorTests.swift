import Foundation
import ModelCore
import Testing

/// Malformed text: each error names what was expected and the exact column (1-based, in characters).
@Suite struct PredicateParserErrorTests {
    /// Text, the column the error must point at, and words the message must contain.
    static let malformed: [(String, Int, String)] = [
        ("", 1, "expected a predicate"),
        ("   ", 4, "expected a predicate"),
        ("name == ", 9, "expected a value after '=='"),
        ("name ==", 8, "expected a value after '=='"),
        ("name ==[c] ", 12, "expected a value after '==[c]'"),
        ("startDate > \"2026\" AND name ==", 31, "expected a value after '=='"),
        ("a == b == c", 8, "comparisons cannot be chained"),
        ("a < b IN {1}", 7, "comparisons cannot be chained"),
        ("(a == 1) == 2", 10, "comparisons cannot be chained"),
        ("TRUEPREDICATE == 1", 15, "comparisons cannot be chained"),
        ("(a == 1", 8, "expected ')' to close the '(' at column 1"),
        ("a == 1 AND (b == 2", 19, "expected ')' to close the '(' at column 12"),
        ("((a == 1)", 10, "expected ')' to close the '(' at column 1"),
        ("a == 1)", 7, "expected AND, OR or the end of the predicate"),
        ("a == 1 xyz", 8, "expected AND, OR or the end of the predicate after '1', found 'xyz'"),
        ("name == \"abc", 9, "unterminated string"),
        ("name == 'abc\\'", 9, "unterminated string"),
        ("name == \"abc\\", 9, "unterminated string"),
        ("d > CAST(\"2026-01-01\", \"datetime\")", 24, "unknown CAST type 'datetime'"),
        ("d > CAST(\"2026-02-30\", \"date\")", 10, "'2026-02-30' is not a valid date"),
        ("d > CAST(\"x\", \"uuid\")", 10, "'x' is not a valid uuid"),
        ("d > CAST(\"nan\", \"double\")", 10, "is not a valid double"),
        ("d > CAST(\"modeld://nope\", \"object\")", 10, "is not an object URI"),
        ("d > CAST(5, \"object\")", 10, "needs a quoted object URI"),
        ("d > CAST(\"x\" \"date\")", 14, "expected ','"),
        ("d > CAST(\"x\", date)", 15, "expected a quoted type name"),
        ("d > CAST(\"x\", \"date\"", 21, "expected ')' to close the CAST at column 5"),
        ("d > CAST x", 10, "expected '('"),
        ("name", 5, "expected a comparison operator"),
        ("(a + b)", 8, "expected a comparison operator (==, !=, <, >, IN, BETWEEN, CONTAINS, LIKE…) after '(a + b)'"),
        (
            "(a + b AND c == 1)", 8,
            "expected a comparison operator (==, !=, <, >, IN, BETWEEN, CONTAINS, LIKE…) after '(a + b)', found 'AND'"
        ),
        ("(a + b c)", 8, "expected a comparison operator or ')' after '(a + b)'"),
        ("a AND b == 1", 3, "expected a comparison operator"),
        ("ANY items.price", 16, "expected a comparison operator after 'ANY items.price'"),
        ("ANY (a == 1)", 5, "expected a key path"),
        ("a == 99999999999999999999", 6, "the integer 99999999999999999999 is out of range"),
        ("a == -9223372036854775809", 6, "out of range"),
        ("a == 1e999", 6, "the number 1e999 is out of range"),
        ("a == 5abc", 6, "malformed number '5abc'"),
        ("a == 1e", 6, "malformed number"),
        ("a == \"\\q\"", 7, "unknown escape '\\q'"),
        ("a == \"\\u{D800}\"", 7, "is not a Unicode scalar"),
        ("a == \"\\u{110000}\"", 7, "is not a Unicode scalar"),
        ("a == \"\\u00e9\"", 7, "malformed \\u escape"),
        ("a == \"\\u{}\"", 7, "malformed \\u escape"),
        ("a == \"\\u{123456789}\"", 7, "malformed \\u escape"),
        ("a # 1", 3, "unexpected character '#'"),
        ("é == 1", 1, "unexpected character 'é'"),
        ("\"é\" == ü", 8, "unexpected character 'ü'"),
        ("\"日本\" == 1 AND x ==", 19, "expected a value"),
        ("a == 1\u{0}", 7, "unexpected character U+0000"),
        ("a\u{A0}== 1", 2, "unexpected character U+00A0"),
        ("a == 1 AND", 11, "expected a predicate or a value after 'AND'"),
        ("NOT", 4, "after 'NOT'"),
        ("a.in == 1", 3, "'in' is a reserved word"),
        ("a.SELF == 1", 3, "'SELF' is a reserved word"),
        ("in == 1", 1, "expected a predicate, found 'in'"),
        ("a == nil.x", 9, "expected AND, OR or the end"),
        ("_a == 1", 1, "'_a' is not a valid property name"),
        ("a._b == 1", 3, "'_b' is not a valid property name"),
        ("a == $_x", 6, "'$_x' is not a valid variable name"),
        ("a == $", 6, "expected a variable name after '$'"),
        ("\(String(repeating: "a", count: 65)) == 1", 1, "is not a valid property name"),
        ("name MATCHES \"x\"", 6, "MATCHES (regular expressions) is not supported"),
        ("a ==[x] 1", 6, "unknown option 'x'"),
        ("a ==[] 1", 6, "expected option letters"),
        ("a ==[c 1", 8, "expected ']'"),
        ("a IN {1, {2}}", 10, "lists cannot be nested"),
        ("a IN {1 2}", 9, "expected ',' or '}' in the list opened at column 6"),
        ("a IN {1,}", 9, "expected a value after ','"),
        ("a IN {1", 8, "expected ',' or '}'"),
        ("a + {1} == 1", 5, "a {…} list cannot take part in arithmetic"),
        ("{1} * 2 == 1", 5, "a {…} list cannot take part in arithmetic"),
        ("SUBQUERY(items, $i, $i.x == 1) > 0", 32, "expected '.@count' after SUBQUERY(…)"),
        ("SUBQUERY(items, $i, $i.x == 1).@sum > 0", 32, "expected '@count'"),
        ("SUBQUERY(items, i, i.x == 1).@count > 0", 17, "expected a variable such as $i"),
        ("SUBQUERY(1, $i, $i.x == 1).@count > 0", 10, "expected a key path"),
        ("SUBQUERY(items.@count, $i, $i.x == 1).@count > 0", 10, "SUBQUERY's first argument must be a key path"),
        ("SUBQUERY(items, $i, $i.x).@count > 0", 25, "expected a comparison operator"),
        ("SUBQUERY(items, $i, $i.x == 1 > 0", 31, "comparisons cannot be chained"),
        ("SUBQUERY(items, $i, $i.x == 1 AND 2).@count > 0", 36, "expected a comparison operator"),
        ("a.@foo == 1", 3, "unknown function '@foo'"),
        ("@count == 1", 1, "'@count' needs a key path before it"),
        ("a.@sum. == 1", 9, "expected an attribute name after 'a.@sum.'"),
        ("trip.@entity == \"x\"", 6, "@entity applies to self or a SUBQUERY variable, not to 'trip'"),
        ("a. == 1", 4, "expected a property name after '.'"),
        ("- 5 == a", 1, "expected a number right after '-'"),
        ("a == -b", 6, "expected a number right after '-'"),
        ("a == +5", 6, "expected a value after '=='"),
        ("a === b", 5, "expected a value after '=='"),
        ("a & b", 3, "a single '&' is not an operator"),
        ("a | b", 3, "a single '|' is not an operator"),
        ("a == ()", 7, "expected a predicate or a value after '('"),
        ("a == (b == 1)", 6, "expected a value, found a predicate in parentheses"),
        ("a == 1 + (b == 1)", 10, "found a predicate in parentheses"),
        ("a == ANY b", 6, "ANY goes at the start of a comparison"),
        ("a == TRUEPREDICATE", 6, "expected a value after '=='"),
        ("a == b AND OR c == 1", 12, "expected a predicate or a value after 'AND'"),
        ("a == 1 NOT b == 2", 8, "expected AND, OR or the end"),
    ]

    @Test(arguments: malformed)
    func rejects(text: String, column: Int, fragment: String) {
        do {
            let parsed = try PredicateParser.parse(text)
            Issue.record("\(text.debugDescription) parsed as \(parsed)")
        } catch {
            #expect(error.code == .invalidPredicate, "\(text.debugDescription): \(error)")
            #expect(error.context["column"] == String(column), "\(text.debugDescription): \(error)")
            #expect(error.message.contains(fragment), "\(text.debugDescription): \(error.message)")
            #expect(error.message.contains("at column \(column)"), "\(text.debugDescription): \(error.message)")
            #expect(error.context["near"] != nil)
        }
    }

    @Test func nearShowsTheTextAroundTheColumn() throws {
        let error = try #require(throws: ModelError.self) { try PredicateParser.parse("price > 5 AND name == AND x") }
        #expect(error.context["column"] == "23")
        #expect(error.context["near"] == "AND name == AND x")
    }
}
