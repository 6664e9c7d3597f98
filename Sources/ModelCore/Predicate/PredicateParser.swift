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
/// levels, fails with `resourceExhausted`. The parser keeps its stacks on the heap, so no input
/// can overflow the thread's stack.
public enum PredicateParser {
    /// The longest predicate text accepted, in UTF-8 bytes (1 MiB).
    public static let maximumLength = 1 << 20

    /// How deeply parentheses, lists and SUBQUERYs may nest in the text: above
    /// ``Predicate/maximumDepth``, so that redundant parentheses are tolerated.
    static let maximumNesting = Predicate.maximumDepth + 16

    /// Parses a whole predicate: `name CONTAINS[c] "par" AND startDate > "2026-01-01"`.
    public static func parse(_ text: String) throws(ModelError) -> Predicate {
        try parse(text, arguments: [])
    }

    /// Parses a whole predicate in which each `%@` stands for the next of `arguments`, put in the
    /// tree as it is: a value is bound, never written into the text and read again.
    public static func parse(_ text: String, arguments: [Expression]) throws(ModelError) -> Predicate {
        var parser = try PredicateTextParser(text, wantsExpression: false, arguments: arguments)
        guard case .predicate(let predicate, _) = try parser.run() else {
            throw ModelError(.invalidPredicate, "expected a predicate") // run() guarantees a predicate here
        }
        guard parser.argumentsUsed == arguments.count else {
            throw ModelError(
                .invalidPredicate,
                "the predicate has \(parser.argumentsUsed) %@ but \(arguments.count) argument(s) were given")
        }
        return predicate
    }

    /// Parses a lone expression: a key path, a literal, a list, arithmetic, a collection function
    /// or a SUBQUERY count (`items.@sum.price * 2`).
    public static func parseExpression(_ text: String) throws(ModelError) -> Expression {
        var parser = try PredicateTextParser(text, wantsExpression: true)
        guard case .expression(let expression, _) = try parser.run() else {
            throw ModelError(.invalidPredicate, "expected an expression") // run() guarantees an expression here
        }
        return expression
    }
}

/// What the parser holds on its operand stack: a predicate or an expression (a parenthesized
/// group may hold either), with the depth the typer would reach below it.
enum ParsedNode {
    case predicate(Predicate, height: Int)
    case expression(Expression, height: Int)

    var height: Int {
        switch self {
        case .predicate(_, let h), .expression(_, let h): h
        }
    }

    var isPredicate: Bool {
        if case .predicate = self { return true }
        return false
    }

    var isList: Bool {
        if case .expression(.list, _) = self { return true }
        return false
    }
}

/// The operator-precedence parser behind ``PredicateParser``. It never recurses: each open
/// parenthesis, list or SUBQUERY is a ``Frame`` on a heap-allocated stack, and each frame has its
/// own operand and operator stacks. Heights are checked as nodes are built, so no tree deeper
/// than ``Predicate/maximumDepth`` is ever made.
struct PredicateTextParser {
    /// One level of nesting: the whole text, a `( … )` group, a `{ … }` list or a SUBQUERY.
    struct Frame {
        enum Kind {
            /// The whole text: a predicate, or an expression for `parseExpression`.
            case top(wantsExpression: Bool)
            /// `(` at `open`: a predicate or an expression.
            case group(open: Int)
            /// `{` at `open`, with the items read so far and their greatest height.
            case list(open: Int, items: [Expression], height: Int)
            /// `SUBQUERY(collection, $variable,` at `start`; the frame reads the predicate.
            case subquery(start: Int, collection: PropertyPath, variable: String)
        }

        var kind: Kind
        var operands: [Operand] = []
        var operators: [PendingOperator] = []
    }

    /// A node on an operand stack, and where its text starts.
    struct Operand {
        var node: ParsedNode
        var start: Int
    }

    /// An operator waiting for its right operand.
    enum PendingOperator {
        /// `AND`/`OR` joining `count` operands (n-ary, so long chains stay flat and linear).
        case junction(isAnd: Bool, count: Int)
        case not(start: Int)
        /// `ANY`, `ALL`, `NONE` before a comparison's left side.
        case modifier(ComparisonModifier, start: Int)
        case comparison(ComparisonOperator, StringOptions, ComparisonModifier, start: Int)
        case arithmetic(ArithmeticOperator)

        /// Binding strength: OR < AND < NOT < comparison < `+ -` < `* /`.
        var precedence: Int {
            switch self {
            case .junction(let isAnd, _): isAnd ? 2 : 1
            case .not, .modifier: 3
            case .comparison: 4
            case .arithmetic(let op): op == .add || op == .subtract ? 5 : 6
            }
        }
    }

    let source: PredicateSource
    var lexer: PredicateLexer
    /// The token being looked at.
    var token: PredicateToken
    /// The source range of what was read last, for "after '…'" in messages.
    var lastRange: Range<Int> = 0..<0
    /// The kind of the token read last, nil at the start.
    var lastKind: PredicateToken.Kind?
    /// The open frames; the last is the innermost.
    var frames: [Frame]
    /// The values `%@` stands for, in order, and how many were taken.
    let arguments: [Expression]
    var argumentsUsed = 0

    init(_ text: String, wantsExpression: Bool, arguments: [Expression] = []) throws(ModelError) {
        let length = text.utf8.count
        guard length <= PredicateParser.maximumLength else {
            throw ModelError(
                .resourceExhausted,
                "the predicate text is \(length) bytes long; at most \(PredicateParser.maximumLength) bytes (1 MiB) are allowed",
                context: ["length": String(length)])
        }
        source = PredicateSource(text)
        self.arguments = arguments
        lexer = PredicateLexer(source)
        frames = [Frame(kind: .top(wantsExpression: wantsExpression))]
        token = try lexer.next()
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
            throw source.error(
                "expected \(what) after \(lastText), found \(source.describe(token))", at: token.start, hint: hint)
        }
        try advance()
    }

    // MARK: Checks and messages

    /// Fails with `resourceExhausted` when a node would be deeper than ``Predicate/maximumDepth``.
    func checkHeight(_ height: Int, at offset: Int) throws(ModelError) {
        guard height <= Predicate.maximumDepth else {
            throw source.error(
                "the predicate is nested more than \(Predicate.maximumDepth) levels deep", at: offset,
                hint: "simplify it", code: .resourceExhausted)
        }
    }

    /// Opens a frame for parentheses, a list or a SUBQUERY starting at `offset`.
    mutating func push(_ kind: Frame.Kind, at offset: Int) throws(ModelError) {
        guard frames.count <= PredicateParser.maximumNesting else {
            throw source.error(
                "parentheses, lists and SUBQUERYs nest more than \(PredicateParser.maximumNesting) levels deep",
                at: offset, hint: "simplify the predicate", code: .resourceExhausted)
        }
        frames.append(Frame(kind: kind))
    }

    /// "expected a comparison operator after 'x', found …" for an expression where a predicate
    /// belongs.
    func missingComparison(after expression: Expression) -> ModelError {
        source.error(
            "expected a comparison operator (==, !=, <, >, IN, BETWEEN, CONTAINS, LIKE…) after '\(Self.shortText(expression))', found \(source.describe(token))",
            at: token.start)
    }

    /// The text of an expression, shortened for messages.
    static func shortText(_ expression: Expression) -> String {
        let text = expression.description
        return text.count > 40 ? String(text.prefix(37)) + "..." : text
    }
}
