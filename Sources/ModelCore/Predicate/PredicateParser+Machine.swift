/// The main loop: alternately read an operand (a value, or something that opens one) and an
/// operator (or something that closes a frame), reducing operators by precedence.
extension PredicateTextParser {
    /// What to read after an operator position: an operand (after an operator or a comma),
    /// another operator (after a closing bracket), or nothing (at the end of the text).
    enum Next {
        case operand, `operator`
        case done(ParsedNode)
    }

    /// What may stand where the next operand goes.
    enum OperandContext {
        /// The start of a predicate: NOT, ANY, TRUEPREDICATE, or a comparison's left side.
        case predicate
        /// The start of a group: a predicate or an expression.
        case either
        /// A value only: after a comparison or arithmetic operator, in a list, after ANY.
        case value
    }

    /// Parses the whole text into a predicate (or an expression, for the top frame that wants one).
    mutating func run() throws(ModelError) -> ParsedNode {
        var expectingOperand = true
        while true {
            if expectingOperand {
                expectingOperand = try readOperand()
            } else {
                switch try readOperator() {
                case .operand: expectingOperand = true
                case .operator: expectingOperand = false
                case .done(let result): return result
                }
            }
        }
    }

    var operandContext: OperandContext {
        let frame = frames[frames.count - 1]
        switch frame.operators.last {
        case .junction?, .not?: return .predicate
        case .modifier?, .comparison?, .arithmetic?: return .value
        case nil:
            switch frame.kind {
            case .top(let wantsExpression): return wantsExpression ? .value : .predicate
            case .group: return .either
            case .list: return .value
            case .subquery: return .predicate
            }
        }
    }

    /// What an operand is expected to be here, for messages.
    private var expectedHere: String {
        switch lastKind {
        case nil: operandContext == .value ? "a value" : "a predicate"
        case .keyword(.and)?, .keyword(.or)?, .keyword(.not)?, .leftParen?: "a predicate or a value after \(lastText)"
        default: "a value after \(lastText)"
        }
    }

    private func operandError(hint: String? = nil) -> ModelError {
        var hint = hint
        if lastKind == nil, token.kind == .end, operandContext == .predicate {
            hint = "write a comparison such as name == \"Paris\", or TRUEPREDICATE"
        }
        return source.error("expected \(expectedHere), found \(source.describe(token))", at: token.start, hint: hint)
    }

    /// Reads what stands where an operand goes. Returns true when an operand is still expected
    /// (after NOT, ANY or an opening bracket), false when one was pushed.
    private mutating func readOperand() throws(ModelError) -> Bool {
        let start = token.start
        let context = operandContext
        switch token.kind {
        case .keyword(.not):
            guard context != .value else { throw operandError() }
            let pending = frames[frames.count - 1].operators.reversed().prefix {
                if case .not = $0 { true } else { false }
            }.count
            try checkHeight(pending + 1, at: start)
            frames[frames.count - 1].operators.append(.not(start: start))
            try advance()
            return true
        case .keyword(.any), .keyword(.some), .keyword(.all), .keyword(.none):
            let modifier: ComparisonModifier =
                switch token.kind {
                case .keyword(.all): .all
                case .keyword(.none): .none
                default: .any
                }
            guard context != .value else {
                throw operandError(
                    hint:
                        "\(modifier.rawValue) goes at the start of a comparison, as in \(modifier.rawValue) items.price > 5"
                )
            }
            frames[frames.count - 1].operators.append(.modifier(modifier, start: start))
            try advance()
            return true
        case .keyword(.truepredicate), .keyword(.falsepredicate):
            guard context != .value else { throw operandError() }
            let value = token.kind == .keyword(.truepredicate)
            try advance()
            try pushOperand(.predicate(.constant(value), height: 0), start: start)
            return false
        case .leftParen:
            try push(.group(open: start), at: start)
            try advance()
            return true
        case .leftBrace:
            if case .list = frames[frames.count - 1].kind, frames[frames.count - 1].operators.isEmpty {
                throw source.error("lists cannot be nested", at: start)
            }
            if case .arithmetic? = frames[frames.count - 1].operators.last {
                throw source.error("a {…} list cannot take part in arithmetic", at: start)
            }
            try advance()
            if token.kind == .rightBrace {
                try advance()
                try pushOperand(.expression(.list([]), height: 0), start: start)
                return false
            }
            try push(.list(open: start, items: [], height: 0), at: start)
            return true
        case .keyword(.subquery):
            let (collection, variable) = try readSubqueryHead()
            try push(.subquery(start: start, collection: collection, variable: variable), at: start)
            return true
        case .minus, .number, .string, .argument, .keyword(.nil), .keyword(.null), .keyword(.true), .keyword(.yes),
            .keyword(.false), .keyword(.no), .keyword(.cast), .keyword(.self), .variable, .identifier, .function:
            let value = try readValue()
            try pushOperand(.expression(value, height: 0), start: start)
            return false
        default:
            throw operandError()
        }
    }

    /// Pushes a finished operand, checking that it may stand here.
    mutating func pushOperand(_ node: ParsedNode, start: Int) throws(ModelError) {
        let top = frames.count - 1
        if node.isPredicate, operandContext == .value {
            if case .modifier(let modifier, _)? = frames[top].operators.last {
                throw source.error(
                    "expected a key path, found a predicate in parentheses", at: start,
                    hint:
                        "\(modifier.rawValue) goes before a key path through a to-many relationship, as in \(modifier.rawValue) items.price > 5"
                )
            }
            throw source.error("expected a value, found a predicate in parentheses", at: start)
        }
        if node.isList {
            if case .arithmetic? = frames[top].operators.last {
                throw source.error("a {…} list cannot take part in arithmetic", at: start)
            }
            if case .list = frames[top].kind, frames[top].operators.isEmpty {
                throw source.error("lists cannot be nested", at: start)
            }
        }
        frames[top].operands.append(Operand(node: node, start: start))
    }

    /// Reads what stands after an operand.
    private mutating func readOperator() throws(ModelError) -> Next {
        let top = frames.count - 1
        if let op = try comparisonOperator() {
            guard allowsPredicates else { try failUnexpected() }
            try reduce(whilePrecedenceAtLeast: 5)
            guard let lhs = frames[top].operands.last else { try failUnexpected() }
            if case .comparison? = frames[top].operators.last { throw chained() }
            if lhs.node.isPredicate { throw chained() }
            var modifier = ComparisonModifier.direct
            var start = lhs.start
            if case .modifier(let m, let s)? = frames[top].operators.last {
                frames[top].operators.removeLast()
                (modifier, start) = (m, s)
            }
            let opStart = token.start
            try advance()
            let options = try parseOptions()
            lastRange = opStart..<lastRange.upperBound
            frames[top].operators.append(.comparison(op, options, modifier, start: start))
            return .operand
        }
        switch token.kind {
        case .keyword(.and), .keyword(.or):
            let isAnd = token.kind == .keyword(.and)
            guard allowsPredicates else { try failUnexpected() }
            try reduce(whilePrecedenceAtLeast: isAnd ? 3 : 2)
            guard let lhs = frames[top].operands.last else { try failUnexpected() }
            if case .expression(let expression, _) = lhs.node { throw missingComparison(after: expression) }
            if case .junction(isAnd, let count)? = frames[top].operators.last {
                frames[top].operators[frames[top].operators.count - 1] = .junction(isAnd: isAnd, count: count + 1)
            } else {
                frames[top].operators.append(.junction(isAnd: isAnd, count: 2))
            }
            try advance()
            return .operand
        default:
            return try readClosingOrArithmetic()
        }
    }
}
