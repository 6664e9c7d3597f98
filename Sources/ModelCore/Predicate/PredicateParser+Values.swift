/// Key paths, collection functions, SUBQUERY, CAST and numbers.
extension PredicateTextParser {
    /// `name`, `trip.destination`, `self`, `$a.category.name`, `items.@count`, `items.@sum.price`,
    /// `$a.@entity`.
    mutating func parseKeyPath() throws(ModelError) -> Expression {
        var components: [String] = []
        var variable: String?
        switch token.kind {
        case .keyword(.self): break
        case .variable(let name): variable = name
        case .identifier(let name): components.append(try propertyName(name))
        default:
            throw source.error("expected a key path, found \(source.describe(token))", at: token.start)
        }
        try advance()
        while token.kind == .dot {
            try advance()
            switch token.kind {
            case .identifier(let name):
                components.append(try propertyName(name))
                try advance()
            case .function(let name):
                return try parseFunction(name, on: PropertyPath(components, variable: variable))
            case .keyword(let keyword):
                throw source.error(
                    "'\(source.excerpt(token.start, token.end))' is a reserved word and cannot name a property",
                    at: token.start, hint: keyword == .self ? "self can only start a key path" : nil)
            default:
                throw source.error(
                    "expected a property name after \(lastText), found \(source.describe(token))", at: token.start)
            }
        }
        return .keyPath(PropertyPath(components, variable: variable))
    }

    /// The identifier at the current token, checked as a property name.
    private func propertyName(_ name: String) throws(ModelError) -> String {
        guard SchemaNames.isWellFormed(name) else {
            throw source.error(
                "'\(name.prefix(70))' is not a valid property name", at: token.start,
                hint: "names are a letter followed by letters, digits or underscores, at most 64 characters")
        }
        return name
    }

    /// `@count`, `@sum.price`, `@entity` after `path.`; the current token is the function.
    private mutating func parseFunction(_ name: String, on path: PropertyPath) throws(ModelError) -> Expression {
        let function: CollectionFunction
        switch name {
        case "entity":
            guard path.components.isEmpty else {
                throw source.error(
                    "@entity applies to self or a SUBQUERY variable, not to '\(path)'", at: token.start,
                    hint: "compare @entity or $v.@entity with an entity name")
            }
            try advance()
            return .entityName(variable: path.variable)
        case "count": function = .count
        case "sum": function = .sum
        case "avg": function = .avg
        case "min": function = .min
        case "max": function = .max
        default:
            throw source.error(
                "unknown function '@\(name.prefix(40))'", at: token.start,
                hint: "use @count, @sum, @avg, @min, @max or @entity")
        }
        try advance()
        var attribute: String?
        if token.kind == .dot {
            try advance()
            guard case .identifier(let attributeName) = token.kind else {
                throw source.error(
                    "expected an attribute name after '\(path).\(function.rawValue).', found \(source.describe(token))",
                    at: token.start)
            }
            attribute = try propertyName(attributeName)
            try advance()
        }
        return .collection(function, path, attribute: attribute)
    }

    /// `SUBQUERY(collection, $v,`: what comes before the SUBQUERY's predicate.
    mutating func readSubqueryHead() throws(ModelError) -> (PropertyPath, String) {
        let example = "write SUBQUERY(items, $i, $i.price > 5).@count"
        try advance()
        try expect(.leftParen, "'('", hint: example)
        let collectionStart = token.start
        guard case .keyPath(let collection) = try parseKeyPath() else {
            throw source.error(
                "SUBQUERY's first argument must be a key path to a to-many relationship", at: collectionStart,
                hint: example)
        }
        try expect(.comma, "',' after the collection", hint: example)
        guard case .variable(let variable) = token.kind else {
            throw source.error(
                "expected a variable such as $i after \(lastText), found \(source.describe(token))",
                at: token.start, hint: example)
        }
        try advance()
        try expect(.comma, "',' after the variable", hint: example)
        return (collection, variable)
    }

    /// `.@count` after a SUBQUERY's closing parenthesis.
    mutating func readSubqueryTail() throws(ModelError) {
        let hint = "modeld compares the number of matching objects: SUBQUERY(…).@count > 0"
        guard token.kind == .dot else {
            throw source.error(
                "expected '.@count' after SUBQUERY(…), found \(source.describe(token))", at: token.start, hint: hint)
        }
        try advance()
        guard token.kind == .function("count") else {
            throw source.error(
                "expected '@count' after 'SUBQUERY(…).', found \(source.describe(token))", at: token.start, hint: hint)
        }
        try advance()
    }

    /// A value that needs no nesting: a literal, a (negative) number, CAST(…), a key path or a
    /// collection function, `@entity`.
    mutating func readValue() throws(ModelError) -> Expression {
        let start = token.start
        switch token.kind {
        case .minus, .number:
            return .literal(try readNumber())
        case .string(let text):
            try advance()
            return .literal(.string(text))
        case .argument:
            guard argumentsUsed < arguments.count else {
                throw source.error(
                    "the predicate has more %@ than the \(arguments.count) argument(s) given", at: start,
                    hint: "each %@ takes the next argument; write a literal value in the text instead")
            }
            argumentsUsed += 1
            try advance()
            return arguments[argumentsUsed - 1]
        case .keyword(.nil), .keyword(.null):
            try advance()
            return .literal(.null)
        case .keyword(.true), .keyword(.yes):
            try advance()
            return .literal(.bool(true))
        case .keyword(.false), .keyword(.no):
            try advance()
            return .literal(.bool(false))
        case .keyword(.cast):
            return try parseCast()
        case .keyword(.self), .variable, .identifier:
            return try parseKeyPath()
        case .function("entity"):
            try advance()
            return .entityName(variable: nil)
        case .function(let name):
            throw source.error(
                "'@\(name.prefix(40))' needs a key path before it", at: start,
                hint: "write items.@count, items.@sum.price; @entity alone is the object's entity name")
        default:
            throw source.error("expected a value, found \(source.describe(token))", at: start)
        }
    }

    /// A number, or `-` directly followed by one (`-5` is the literal -5).
    mutating func readNumber() throws(ModelError) -> Value {
        let start = token.start
        if token.kind == .minus {
            var lookahead = lexer
            let next = try lookahead.next()
            guard case .number(let digits, let isDouble) = next.kind, next.start == token.end else {
                throw source.error(
                    "expected a number right after '-'", at: start,
                    hint: "a minus sign before a value makes a negative number (-5); to subtract, write a - b")
            }
            lexer = lookahead
            token = next
            let value = try number(digits, isDouble: isDouble, negative: true, at: start)
            try advance()
            lastRange = start..<lastRange.upperBound
            return value
        }
        guard case .number(let digits, let isDouble) = token.kind else {
            throw source.error("expected a number, found \(source.describe(token))", at: start)
        }
        let value = try number(digits, isDouble: isDouble, negative: false, at: start)
        try advance()
        return value
    }

    /// `CAST("2026-01-31T00:00:00Z", "date")`, `CAST("modeld://…/Trip/p1", "object")`.
    mutating func parseCast() throws(ModelError) -> Expression {
        let start = token.start
        let types = (AttributeType.allCases.map(\.rawValue) + ["object"]).joined(separator: ", ")
        let example = "write CAST(\"2026-01-31\", \"date\")"
        try advance()
        try expect(.leftParen, "'('", hint: example)
        let valueStart = token.start
        let raw: Value
        switch token.kind {
        case .string(let text):
            raw = .string(text)
            try advance()
        case .number, .minus:
            raw = try readNumber()
        case .keyword(.true), .keyword(.false), .keyword(.yes), .keyword(.no):
            raw = .bool(token.kind == .keyword(.true) || token.kind == .keyword(.yes))
            try advance()
        default:
            throw source.error(
                "expected a quoted value as CAST's first argument, found \(source.describe(token))",
                at: valueStart, hint: example)
        }
        try expect(.comma, "','", hint: example)
        let typeStart = token.start
        guard case .string(let typeName) = token.kind else {
            throw source.error(
                "expected a quoted type name after ',', found \(source.describe(token))", at: typeStart,
                hint: "the types are \(types)")
        }
        try advance()
        guard token.kind == .rightParen else {
            throw source.error(
                "expected ')' to close the CAST at column \(source.column(start)), found \(source.describe(token))",
                at: token.start)
        }
        try advance()

        let lowered = typeName.lowercased()
        if lowered == "object" {
            guard case .string(let uri) = raw else {
                throw source.error("CAST(…, \"object\") needs a quoted object URI", at: valueStart)
            }
            do {
                return .object(try PersistentIdentifier(uri: uri))
            } catch {
                throw source.error(error.message, at: valueStart)
            }
        }
        guard let type = AttributeType(rawValue: lowered) else {
            throw source.error(
                "unknown CAST type '\(typeName.prefix(40))'", at: typeStart, hint: "the types are \(types)")
        }
        let value: Value?
        if case .string(let text) = raw {
            value = Value(parsing: text, as: type)
        } else {
            value = try? raw.converted(to: type)
        }
        guard let value, Self.isUsableLiteral(value) else {
            let shown = raw.textForm.map { $0.count > 40 ? String($0.prefix(37)) + "..." : $0 } ?? ""
            let hint =
                switch type {
                case .date: "dates are ISO 8601: \"2026-01-31\" or \"2026-01-31T12:00:00.000000Z\""
                case .data: "data is base64"
                case .decimal: "decimals are written like \"12.50\" or \"-1e-3\""
                default: nil as String?
                }
            throw source.error("'\(shown)' is not a valid \(type.rawValue)", at: valueStart, hint: hint)
        }
        return .literal(value)
    }

    /// Whether a literal can be compared and printed back: no NaN, no NaN decimal.
    private static func isUsableLiteral(_ value: Value) -> Bool {
        switch value {
        case .double(let d): !d.isNaN
        case .decimal(let d): !d.isNaN
        default: true
        }
    }

    /// An integer (Int64) or a double from its digits; `negative` adds the minus sign.
    func number(_ digits: String, isDouble: Bool, negative: Bool, at offset: Int) throws(ModelError) -> Value {
        let text = negative ? "-" + digits : digits
        let shown = text.count > 40 ? String(text.prefix(37)) + "..." : text
        if isDouble {
            guard let value = Double(text), value.isFinite else {
                throw source.error(
                    "the number \(shown) is out of range", at: offset,
                    hint: "doubles reach about ±1.8e+308")
            }
            return .double(value)
        }
        guard let value = Int64(text) else {
            throw source.error(
                "the integer \(shown) is out of range", at: offset,
                hint:
                    "integers are 64-bit, from -9223372036854775808 to 9223372036854775807; write larger numbers as doubles, such as 1e+20"
            )
        }
        return .int(value)
    }
}
