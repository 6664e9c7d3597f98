/// Closing frames, arithmetic operators, and turning pending operators into tree nodes.
extension PredicateTextParser {
    /// Whether the innermost frame may hold comparisons and junctions (lists and the top of
    /// `parseExpression` may not).
    var allowsPredicates: Bool {
        switch frames[frames.count - 1].kind {
        case .top(let wantsExpression): !wantsExpression
        case .group, .subquery: true
        case .list: false
        }
    }

    /// Arithmetic, `)`, `,`, `}` or the end of the text after an operand.
    mutating func readClosingOrArithmetic() throws(ModelError) -> Next {
        let top = frames.count - 1
        let start = token.start
        switch token.kind {
        case .plus, .minus, .star, .slash:
            let op: ArithmeticOperator =
                switch token.kind {
                case .plus: .add
                case .minus: .subtract
                case .star: .multiply
                default: .divide
                }
            try reduce(whilePrecedenceAtLeast: PendingOperator.arithmetic(op).precedence)
            guard let lhs = frames[top].operands.last, !lhs.node.isPredicate else { try failUnexpected() }
            if lhs.node.isList { throw source.error("a {…} list cannot take part in arithmetic", at: start) }
            frames[top].operators.append(.arithmetic(op))
            try advance()
            return .operand
        case .rightParen:
            switch frames[top].kind {
            case .group(let open):
                let inner = try reduceFrame()
                frames.removeLast()
                try advance()
                try pushOperand(inner.node, start: open)
                return .operator
            case .subquery(let subqueryStart, let collection, let variable):
                let (predicate, innerHeight): (Predicate, Int)
                switch try reduceFrame().node {
                case .expression(let expression, _): throw missingComparison(after: expression)
                case .predicate(let p, let h): (predicate, innerHeight) = (p, h)
                }
                frames.removeLast()
                try advance()
                try readSubqueryTail()
                let height = innerHeight + 1
                try checkHeight(height, at: subqueryStart)
                try pushOperand(
                    .expression(
                        .subqueryCount(collection: collection, variable: variable, predicate: predicate),
                        height: height), start: subqueryStart)
                return .operator
            default:
                try failUnexpected()
            }
        case .comma, .rightBrace:
            guard case .list(let open, var items, var height) = frames[top].kind else { try failUnexpected() }
            // Drop the frame's reference to the items, so that appending does not copy them.
            frames[top].kind = .list(open: open, items: [], height: 0)
            let item = try reduceFrame()
            guard case .expression(let expression, let itemHeight) = item.node else { try failUnexpected() }
            items.append(expression)
            height = max(height, itemHeight)
            guard items.count <= Predicate.maximumListCount else {
                throw source.error(
                    "the list has more than \(Predicate.maximumListCount) values", at: item.start,
                    code: .resourceExhausted)
            }
            let closes = token.kind == .rightBrace
            try advance()
            if closes {
                frames.removeLast()
                try pushOperand(.expression(.list(items), height: height), start: open)
                return .operator
            }
            frames[top] = Frame(kind: .list(open: open, items: items, height: height))
            return .operand
        case .end:
            guard frames.count == 1, case .top(let wantsExpression) = frames[top].kind else { try failUnexpected() }
            let result = try reduceFrame().node
            if !wantsExpression, case .expression(let expression, _) = result {
                throw missingComparison(after: expression)
            }
            return .done(result)
        default:
            try failUnexpected()
        }
    }

    /// Applies pending operators of the innermost frame while they bind at least as strongly as
    /// `minimum`.
    mutating func reduce(whilePrecedenceAtLeast minimum: Int) throws(ModelError) {
        let top = frames.count - 1
        while let op = frames[top].operators.last, op.precedence >= minimum {
            frames[top].operators.removeLast()
            try apply(op)
        }
    }

    /// Applies every pending operator of the innermost frame and returns its one operand.
    mutating func reduceFrame() throws(ModelError) -> Operand {
        try reduce(whilePrecedenceAtLeast: 0)
        let operands = frames[frames.count - 1].operands
        guard operands.count == 1, let result = operands.last else {
            throw source.error("expected an operator before \(source.describe(token))", at: token.start)
        }
        return result
    }

    private mutating func popOperand() throws(ModelError) -> Operand {
        guard let operand = frames[frames.count - 1].operands.popLast() else {
            throw source.error("expected a value before \(source.describe(token))", at: token.start)
        }
        return operand
    }

    private mutating func popExpression() throws(ModelError) -> (Expression, Int, Int) {
        let operand = try popOperand()
        guard case .expression(let expression, let height) = operand.node else {
            throw source.error("expected a value, found a predicate in parentheses", at: operand.start)
        }
        return (expression, height, operand.start)
    }

    /// Turns one pending operator and its operands into a node.
    private mutating func apply(_ op: PendingOperator) throws(ModelError) {
        let top = frames.count - 1
        switch op {
        case .arithmetic(let arithmetic):
            let (right, rightHeight, _) = try popExpression()
            let (left, leftHeight, start) = try popExpression()
            let height = max(leftHeight, rightHeight) + 1
            try checkHeight(height, at: start)
            frames[top].operands.append(
                Operand(node: .expression(.arithmetic(arithmetic, left, right), height: height), start: start))
        case .comparison(let comparison, let options, let modifier, let start):
            let (rhs, rhsHeight, _) = try popExpression()
            let (lhs, lhsHeight, _) = try popExpression()
            let height = max(lhsHeight, rhsHeight) + 2
            try checkHeight(height, at: start)
            let node = Predicate.comparison(Comparison(lhs, comparison, rhs, modifier: modifier, options: options))
            frames[top].operands.append(Operand(node: .predicate(node, height: height), start: start))
        case .not(let start):
            switch try popOperand().node {
            case .expression(let expression, _):
                throw missingComparison(after: expression)
            case .predicate(let predicate, let innerHeight):
                try checkHeight(innerHeight + 1, at: start)
                frames[top].operands.append(
                    Operand(node: .predicate(.not(predicate), height: innerHeight + 1), start: start))
            }
        case .modifier(let modifier, _):
            let operand = try popOperand()
            let text = if case .expression(let expression, _) = operand.node { Self.shortText(expression) } else { "…" }
            throw source.error(
                "expected a comparison operator after '\(modifier.rawValue) \(text)', found \(source.describe(token))",
                at: token.start)
        case .junction(let isAnd, let count):
            var parts: [Operand] = []
            for _ in 0..<count { parts.append(try popOperand()) }
            var children: [Predicate] = []
            var childHeight = 0
            for part in parts.reversed() {
                switch part.node {
                case .expression(let expression, _):
                    throw missingComparison(after: expression)
                case .predicate(.and(let inner), let height) where isAnd,
                    .predicate(.or(let inner), let height) where !isAnd:
                    // A parenthesized junction of the same kind is spliced in: never AND directly in AND.
                    children.append(contentsOf: inner)
                    childHeight = max(childHeight, height - 1)
                case .predicate(let predicate, let height):
                    children.append(predicate)
                    childHeight = max(childHeight, height)
                }
            }
            let start = parts.last?.start ?? token.start
            try checkHeight(childHeight + 1, at: start)
            let node: Predicate = isAnd ? .and(children) : .or(children)
            frames[top].operands.append(Operand(node: .predicate(node, height: childHeight + 1), start: start))
        }
    }

    /// Fails for a token that cannot follow what was read, saying what could.
    mutating func failUnexpected() throws(ModelError) -> Never {
        let found = source.describe(token)
        let offset = token.start
        let after = lastText
        let kind = frames[frames.count - 1].kind
        let result = try reduceFrame().node
        var expression: Expression?
        if case .expression(let e, _) = result { expression = e }
        switch kind {
        case .top(let wantsExpression):
            if wantsExpression {
                throw source.error("expected the end of the expression after \(after), found \(found)", at: offset)
            }
            if let expression { throw missingComparison(after: expression) }
            throw source.error(
                "expected AND, OR or the end of the predicate after \(after), found \(found)", at: offset)
        case .group(let open):
            if let expression {
                throw source.error(
                    "expected a comparison operator or ')' after '\(Self.shortText(expression))', found \(found)",
                    at: offset)
            }
            throw source.error(
                "expected ')' to close the '(' at column \(source.column(open)), found \(found)", at: offset)
        case .list(let open, _, _):
            throw source.error(
                "expected ',' or '}' in the list opened at column \(source.column(open)), found \(found)", at: offset)
        case .subquery(let start, _, _):
            if let expression { throw missingComparison(after: expression) }
            throw source.error(
                "expected ')' to close the SUBQUERY at column \(source.column(start)), found \(found)", at: offset)
        }
    }

    /// `a == b == c` and `(a == b) == c` are errors: a comparison's result cannot be compared.
    func chained() -> ModelError {
        source.error(
            "comparisons cannot be chained: expected AND or OR before \(source.describe(token))", at: token.start)
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
            throw source.error(
                "MATCHES (regular expressions) is not supported", at: token.start,
                hint: "use LIKE with * and ?, or CONTAINS, BEGINSWITH, ENDSWITH")
        default: return nil
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
                    throw source.error(
                        "unknown option '\(letter)' in \(source.describe(token))", at: token.start, hint: hint)
                }
            }
            try advance()
        default:
            throw source.error(
                "expected option letters after '[', found \(source.describe(token))", at: token.start, hint: hint)
        }
        guard token.kind == .rightBracket else {
            throw source.error(
                "expected ']' to close the '[' at column \(source.column(open)), found \(source.describe(token))",
                at: token.start, hint: hint)
        }
        try advance()
        return options
    }
}
