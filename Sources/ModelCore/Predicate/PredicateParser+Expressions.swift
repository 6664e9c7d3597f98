/// The expression level of the grammar: `+ -` < `* /` < values, key paths, lists, SUBQUERY, CAST.
extension PredicateTextParser {
    /// An operand that must be an expression (not a parenthesized predicate).
    mutating func parseOperand(role: String, hint: String? = nil) throws(ModelError) -> (Expression, Int) {
        let start = token.start
        switch try parseSum() {
        case .expression(let expression, let height):
            return (expression, height)
        case .predicate:
            throw source.error("expected \(role), found a predicate in parentheses", at: start, hint: hint)
        }
    }

    /// `a + b - c`, left to right.
    mutating func parseSum() throws(ModelError) -> ParsedNode {
        try parseArithmetic(additive: true)
    }

    /// `a * b / c`, left to right.
    mutating func parseProduct() throws(ModelError) -> ParsedNode {
        try parseArithmetic(additive: false)
    }

    private func arithmeticOperator(additive: Bool) -> ArithmeticOperator? {
        switch (token.kind, additive) {
        case (.plus, true): .add
        case (.minus, true): .subtract
        case (.star, false): .multiply
        case (.slash, false): .divide
        default: nil
        }
    }

    private mutating func parseArithmetic(additive: Bool) throws(ModelError) -> ParsedNode {
        let start = token.start
        let first = additive ? try parseProduct() : try parsePrimary()
        guard case .expression(var left, var height) = first else { return first }
        while let op = arithmeticOperator(additive: additive) {
            if case .list = left {
                throw source.error("a {…} list cannot take part in arithmetic", at: token.start)
            }
            try advance()
            let operandStart = token.start
            let operand = additive ? try parseProduct() : try parsePrimary()
            let (right, rightHeight) = try requireExpression(operand, at: operandStart, role: "a value after '\(op.rawValue)'")
            if case .list = right {
                throw source.error("a {…} list cannot take part in arithmetic", at: operandStart)
            }
            height = max(height, rightHeight) + 1
            try checkHeight(height, at: start)
            left = .arithmetic(op, left, right)
        }
        return .expression(left, height: height)
    }

    private func requireExpression(_ node: ParsedNode, at offset: Int, role: String) throws(ModelError) -> (Expression, Int) {
        guard case .expression(let expression, let height) = node else {
            throw source.error("expected \(role), found a predicate in parentheses", at: offset)
        }
        return (expression, height)
    }

    /// A value, a key path, a group, a list, SUBQUERY(…).@count or CAST(…).
    mutating func parsePrimary() throws(ModelError) -> ParsedNode {
        let start = token.start
        switch token.kind {
        case .leftParen:
            return try parseGroup()
        case .leftBrace:
            let (list, height) = try parseList()
            return .expression(list, height: height)
        case .minus:
            var lookahead = lexer
            let next = try lookahead.next()
            guard case .number(let digits, let isDouble) = next.kind, next.start == token.end else {
                throw source.error("expected a number right after '-'", at: start,
                                   hint: "a minus sign before a value makes a negative number (-5); to subtract, write a - b")
            }
            lexer = lookahead
            token = next
            let value = try number(digits, isDouble: isDouble, negative: true, at: start)
            try advance()
            lastRange = start..<lastRange.upperBound
            return .expression(.literal(value), height: 0)
        case .number(let digits, let isDouble):
            let value = try number(digits, isDouble: isDouble, negative: false, at: start)
            try advance()
            return .expression(.literal(value), height: 0)
        case .string(let text):
            try advance()
            return .expression(.literal(.string(text)), height: 0)
        case .keyword(.nil), .keyword(.null):
            try advance()
            return .expression(.literal(.null), height: 0)
        case .keyword(.true), .keyword(.yes):
            try advance()
            return .expression(.literal(.bool(true)), height: 0)
        case .keyword(.false), .keyword(.no):
            try advance()
            return .expression(.literal(.bool(false)), height: 0)
        case .keyword(.subquery):
            return try parseSubquery()
        case .keyword(.cast):
            return .expression(try parseCast(), height: 0)
        case .keyword(.self), .variable, .identifier:
            return .expression(try parseKeyPath(), height: 0)
        case .function("entity"):
            try advance()
            return .expression(.entityName(variable: nil), height: 0)
        case .function(let name):
            throw source.error("'@\(name)' needs a key path before it", at: start,
                               hint: "write items.@count, items.@sum.price; @entity alone is the object's entity name")
        case .keyword(let keyword):
            let hint: String? = switch keyword {
            case .any, .all, .none, .some: "\(keyword.rawValue.uppercased()) goes at the start of a comparison"
            case .in, .between, .contains, .beginswith, .endswith, .like, .matches, .and, .or, .not: nil
            default: "'\(keyword.rawValue)' is a reserved word and cannot name a property"
            }
            throw source.error("expected \(expectedHere), found \(source.describe(token))", at: start, hint: hint)
        default:
            throw source.error("expected \(expectedHere), found \(source.describe(token))", at: start)
        }
    }

    /// What a primary is expected to be here, for messages: "a predicate" at the start, "a value
    /// after '=='" after an operator.
    private var expectedHere: String {
        switch lastKind {
        case nil: "a predicate"
        case .keyword(.and)?, .keyword(.or)?, .keyword(.not)?, .leftParen?: "a predicate or a value after \(lastText)"
        default: "a value after \(lastText)"
        }
    }

    /// `( … )`: a predicate or an expression.
    private mutating func parseGroup() throws(ModelError) -> ParsedNode {
        let open = token.start
        try enterNesting(at: open)
        try advance()
        let inner = try parseDisjunction()
        guard token.kind == .rightParen else {
            if case .expression(let expression, _) = inner {
                throw source.error("expected a comparison operator or ')' after '\(Self.shortText(expression))', found \(source.describe(token))",
                                   at: token.start)
            }
            throw source.error("expected ')' to close the '(' at column \(source.column(open)), found \(source.describe(token))",
                               at: token.start)
        }
        try advance()
        leaveNesting()
        return inner
    }

    /// `{a, b, c}`; lists do not nest.
    private mutating func parseList() throws(ModelError) -> (Expression, Int) {
        let open = token.start
        try enterNesting(at: open)
        try advance()
        var items: [Expression] = []
        var height = 0
        if token.kind == .rightBrace {
            try advance()
            leaveNesting()
            return (.list([]), 0)
        }
        while true {
            let itemStart = token.start
            if token.kind == .leftBrace { throw source.error("lists cannot be nested", at: itemStart) }
            let (item, itemHeight) = try parseOperand(role: "a value")
            if case .list = item {
                throw source.error("lists cannot be nested", at: itemStart)
            }
            items.append(item)
            height = max(height, itemHeight)
            guard items.count <= Predicate.maximumListCount else {
                throw source.error("the list has more than \(Predicate.maximumListCount) values", at: itemStart,
                                   code: .resourceExhausted)
            }
            if token.kind == .comma {
                try advance()
            } else if token.kind == .rightBrace {
                try advance()
                break
            } else {
                throw source.error("expected ',' or '}' in the list opened at column \(source.column(open)), found \(source.describe(token))",
                                   at: token.start)
            }
        }
        leaveNesting()
        return (.list(items), height)
    }
}
