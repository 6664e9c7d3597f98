/// The predicate level of the grammar: OR < AND < NOT < comparison.
extension PredicateTextParser {
    /// `a OR b OR …`, flattened (a parenthesized OR inside contributes its parts).
    mutating func parseDisjunction() throws(ModelError) -> ParsedNode {
        try parseJunction(isAnd: false)
    }

    /// `a AND b AND …`, flattened.
    mutating func parseConjunction() throws(ModelError) -> ParsedNode {
        try parseJunction(isAnd: true)
    }

    /// One loop for both junctions; a parenthesized junction of the same kind is spliced in, so
    /// the parser never produces an AND directly inside an AND (or an OR inside an OR).
    private mutating func parseJunction(isAnd: Bool) throws(ModelError) -> ParsedNode {
        let keyword: PredicateKeyword = isAnd ? .and : .or
        let start = token.start
        let first = isAnd ? try parseNegation() : try parseConjunction()
        guard token.kind == .keyword(keyword) else { return first }
        var parts: [Predicate] = []
        var childHeight = 0
        func add(_ node: ParsedNode, parser: PredicateTextParser) throws(ModelError) {
            let predicate = try parser.requirePredicate(node)
            switch (predicate, isAnd) {
            case (.and(let inner), true), (.or(let inner), false):
                parts.append(contentsOf: inner)
                childHeight = max(childHeight, node.height - 1)
            default:
                parts.append(predicate)
                childHeight = max(childHeight, node.height)
            }
        }
        try add(first, parser: self)
        while token.kind == .keyword(keyword) {
            try advance()
            let next = isAnd ? try parseNegation() : try parseConjunction()
            try add(next, parser: self)
        }
        let height = childHeight + 1
        try checkHeight(height, at: start)
        return .predicate(isAnd ? .and(parts) : .or(parts), height: height)
    }

    /// `NOT p`, `!p`, `NOT NOT p`… read in a loop.
    mutating func parseNegation() throws(ModelError) -> ParsedNode {
        let start = token.start
        var count = 0
        while token.kind == .keyword(.not) {
            count += 1
            if count > Predicate.maximumDepth { try checkHeight(count, at: token.start) }
            try advance()
        }
        let operand = try parseComparison()
        guard count > 0 else { return operand }
        var predicate = try requirePredicate(operand)
        let height = operand.height + count
        try checkHeight(height, at: start)
        for _ in 0..<count { predicate = .not(predicate) }
        return .predicate(predicate, height: height)
    }

    /// A comparison, `TRUEPREDICATE`/`FALSEPREDICATE`, or a parenthesized group. A group may turn
    /// out to hold an expression (`(a + b) > 5`); a bare expression is returned as such, and the
    /// caller decides whether that is an error.
    mutating func parseComparison() throws(ModelError) -> ParsedNode {
        let start = token.start
        var modifier = ComparisonModifier.direct
        switch token.kind {
        case .keyword(.truepredicate), .keyword(.falsepredicate):
            let value = token.kind == .keyword(.truepredicate)
            try advance()
            try rejectChainedComparison()
            return .predicate(.constant(value), height: 0)
        case .keyword(.any), .keyword(.some): modifier = .any
        case .keyword(.all): modifier = .all
        case .keyword(.none): modifier = .none
        default: break
        }

        let lhs: Expression
        var lhsHeight: Int
        if modifier != .direct {
            try advance()
            (lhs, lhsHeight) = try parseOperand(role: "a key path",
                hint: "\(modifier.rawValue) goes before a key path through a to-many relationship, as in \(modifier.rawValue) items.price > 5")
        } else {
            let node = try parseSum()
            guard case .expression(let expression, let height) = node else {
                try rejectChainedComparison()
                return node
            }
            (lhs, lhsHeight) = (expression, height)
        }

        guard let op = try comparisonOperator() else {
            if modifier != .direct {
                throw source.error("expected a comparison operator after '\(modifier.rawValue) \(Self.shortText(lhs))', found \(source.describe(token))",
                                   at: token.start)
            }
            return .expression(lhs, height: lhsHeight)
        }
        let opStart = token.start
        try advance()
        let options = try parseOptions()
        lastRange = opStart..<lastRange.upperBound
        let (rhs, rhsHeight) = try parseOperand(role: "a value")
        lhsHeight = max(lhsHeight, rhsHeight) + 2
        try checkHeight(lhsHeight, at: start)
        try rejectChainedComparison()
        return .predicate(.comparison(Comparison(lhs, op, rhs, modifier: modifier, options: options)), height: lhsHeight)
    }

    /// The comparison operator at the current token, if it is one.
    func comparisonOperator() throws(ModelError) -> ComparisonOperator? {
        switch token.kind {
        case .comparison(let op): return op
        case .keyword(.in): return .in
        case .keyword(.between): return .between
        case .keyword(.contains): return .contains
        case .keyword(.beginswith): return .beginsWith
        case .keyword(.endswith): return .endsWith
        case .keyword(.like): return .like
        case .keyword(.matches):
            throw source.error("MATCHES (regular expressions) is not supported", at: token.start,
                               hint: "use LIKE with * and ?, or CONTAINS, BEGINSWITH, ENDSWITH")
        default: return nil
        }
    }

    /// `a == b == c` and `(a == b) == c` are errors: a comparison's result cannot be compared.
    func rejectChainedComparison() throws(ModelError) {
        if try comparisonOperator() != nil {
            throw source.error("comparisons cannot be chained: expected AND or OR before \(source.describe(token))",
                               at: token.start)
        }
    }

    /// `[c]`, `[d]`, `[cd]` after an operator (letters in any order and case), or nothing.
    mutating func parseOptions() throws(ModelError) -> StringOptions {
        guard token.kind == .leftBracket else { return [] }
        let open = token.start
        try advance()
        let hint = "the options are [c] (ignore case), [d] (ignore diacritics) and [cd]"
        var options: StringOptions = []
        switch token.kind {
        case .identifier, .keyword:
            for letter in source.excerpt(token.start, token.end, limit: 100) {
                switch letter {
                case "c", "C": options.insert(.caseInsensitive)
                case "d", "D": options.insert(.diacriticInsensitive)
                default:
                    throw source.error("unknown option '\(letter)' in \(source.describe(token))", at: token.start, hint: hint)
                }
            }
            try advance()
        default:
            throw source.error("expected option letters after '[', found \(source.describe(token))", at: token.start, hint: hint)
        }
        guard token.kind == .rightBracket else {
            throw source.error("expected ']' to close the '[' at column \(source.column(open)), found \(source.describe(token))",
                               at: token.start, hint: hint)
        }
        try advance()
        return options
    }
}
