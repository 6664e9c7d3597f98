/// Reads predicate text in NSPredicate's syntax into a ``Predicate`` tree. It reads back exactly
/// what ``Predicate/description`` writes: for every tree it produces, `parse(tree.description)`
/// gives the same tree.
///
/// Besides the canonical form it accepts NSPredicate's conveniences: keywords in any case; `=`,
/// `<>`, `=<`, `=>`; `&&`, `||`, `!`; `SOME` for `ANY`; `NULL`, `YES`, `NO`, `SELF`; single-quoted
/// strings; arithmetic with the usual precedence. `AND` and `OR` chains come out flat:
/// `(a AND b) AND c` is one `.and([a, b, c])`.
///
/// Errors are ``ModelError`` values with code `invalidPredicate`, a message that says what was
/// expected and at which column (1-based, in characters), and `column` and `near` in the context.
/// Text longer than ``maximumLength`` bytes, or nested deeper than ``Predicate/maximumDepth``
/// levels, fails with `resourceExhausted`; the parser never recurses without bound.
public enum PredicateParser {
    /// The longest predicate text accepted, in UTF-8 bytes (1 MiB).
    public static let maximumLength = 1 << 20

    /// How deeply parentheses, lists and SUBQUERYs may nest in the text. It is above
    /// ``Predicate/maximumDepth`` so that redundant parentheses are tolerated, and low enough that
    /// parsing never needs much stack.
    static let maximumNesting = Predicate.maximumDepth + 16

    /// Parses a whole predicate: `name CONTAINS[c] "par" AND startDate > "2026-01-01"`.
    public static func parse(_ text: String) throws(ModelError) -> Predicate {
        var parser = try PredicateTextParser(text)
        return try parser.parseWholePredicate()
    }

    /// Parses a lone expression: a key path, a literal, arithmetic, a collection function or a
    /// SUBQUERY count (`items.@sum.price * 2`).
    public static func parseExpression(_ text: String) throws(ModelError) -> Expression {
        var parser = try PredicateTextParser(text)
        return try parser.parseWholeExpression()
    }
}

/// What a parsing step produced: a predicate or an expression (a parenthesized group may hold
/// either), with the depth the typer would reach below it.
enum ParsedNode {
    case predicate(Predicate, height: Int)
    case expression(Expression, height: Int)

    var height: Int {
        switch self {
        case .predicate(_, let h), .expression(_, let h): h
        }
    }
}

/// The recursive-descent parser behind ``PredicateParser``. Recursion happens only into
/// parentheses, lists and SUBQUERYs, and is bounded by ``PredicateParser/maximumNesting``;
/// chains (`NOT NOT …`, `a + b + …`, `a AND b AND …`) are loops. Heights are checked as nodes are
/// built, so no tree deeper than ``Predicate/maximumDepth`` is ever made.
struct PredicateTextParser {
    let source: PredicateSource
    var lexer: PredicateLexer
    /// The token being looked at.
    var token: PredicateToken
    /// The source range of what was read last, for "after '…'" in messages.
    var lastRange: Range<Int> = 0..<0
    /// The kind of the token read last, nil at the start.
    var lastKind: PredicateToken.Kind?
    /// How many parentheses, lists and SUBQUERYs enclose the current position.
    var nesting = 0

    init(_ text: String) throws(ModelError) {
        let length = text.utf8.count
        guard length <= PredicateParser.maximumLength else {
            throw ModelError(.resourceExhausted,
                "the predicate text is \(length) bytes long; at most \(PredicateParser.maximumLength) bytes (1 MiB) are allowed",
                context: ["length": String(length)])
        }
        source = PredicateSource(text)
        lexer = PredicateLexer(source)
        token = try lexer.next()
    }

    // MARK: Entry points

    mutating func parseWholePredicate() throws(ModelError) -> Predicate {
        if token.kind == .end {
            throw source.error("expected a predicate, found the end of the text", at: token.start,
                               hint: "write a comparison such as name == \"Paris\", or TRUEPREDICATE")
        }
        let node = try parseDisjunction()
        let predicate = try requirePredicate(node)
        guard token.kind == .end else {
            throw source.error("expected AND, OR or the end of the predicate after \(lastText), found \(source.describe(token))",
                               at: token.start)
        }
        return predicate
    }

    mutating func parseWholeExpression() throws(ModelError) -> Expression {
        if token.kind == .end {
            throw source.error("expected a value, found the end of the text", at: token.start)
        }
        let (expression, _) = try parseOperand(role: "a value")
        guard token.kind == .end else {
            throw source.error("expected the end of the expression after \(lastText), found \(source.describe(token))",
                               at: token.start)
        }
        return expression
    }

    // MARK: Tokens

    /// Moves to the next token.
    mutating func advance() throws(ModelError) {
        lastRange = token.start..<token.end
        lastKind = token.kind
        token = try lexer.next()
    }

    /// What was read last, quoted, for messages.
    var lastText: String { "'\(source.excerpt(lastRange.lowerBound, lastRange.upperBound, limit: 30))'" }

    /// Consumes a token of `kind`, or fails with "expected `what` after …".
    mutating func expect(_ kind: PredicateToken.Kind, _ what: String, hint: String? = nil) throws(ModelError) {
        guard token.kind == kind else {
            throw source.error("expected \(what) after \(lastText), found \(source.describe(token))", at: token.start, hint: hint)
        }
        try advance()
    }

    /// Fails with `resourceExhausted` when a node would be deeper than ``Predicate/maximumDepth``.
    func checkHeight(_ height: Int, at offset: Int) throws(ModelError) {
        guard height <= Predicate.maximumDepth else {
            throw source.error("the predicate is nested more than \(Predicate.maximumDepth) levels deep", at: offset,
                               hint: "simplify it", code: .resourceExhausted)
        }
    }

    /// Enters parentheses, a list or a SUBQUERY opened at `offset`.
    mutating func enterNesting(at offset: Int) throws(ModelError) {
        nesting += 1
        guard nesting <= PredicateParser.maximumNesting else {
            throw source.error("parentheses, lists and SUBQUERYs nest more than \(PredicateParser.maximumNesting) levels deep",
                               at: offset, hint: "simplify the predicate", code: .resourceExhausted)
        }
    }

    mutating func leaveNesting() { nesting -= 1 }

    // MARK: Node kinds

    /// The predicate in `node`; an expression here lacks its comparison operator.
    func requirePredicate(_ node: ParsedNode) throws(ModelError) -> Predicate {
        switch node {
        case .predicate(let predicate, _):
            return predicate
        case .expression(let expression, _):
            throw source.error("expected a comparison operator (==, !=, <, >, IN, BETWEEN, CONTAINS, LIKE…) after '\(Self.shortText(expression))', found \(source.describe(token))",
                               at: token.start)
        }
    }

    /// The text of an expression, shortened for messages.
    static func shortText(_ expression: Expression) -> String {
        let text = expression.description
        return text.count > 40 ? String(text.prefix(37)) + "..." : text
    }
}
