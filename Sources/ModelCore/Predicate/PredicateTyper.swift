import Foundation

/// What an expression evaluates to, as far as typing is concerned.
public enum ExpressionKind: Hashable, Sendable, CustomStringConvertible {
    /// A value of an attribute type.
    case value(AttributeType)
    /// A reference to an object of an entity (or one of its subentities).
    case object(entity: String)
    /// The nil literal.
    case null
    /// A `{…}` list.
    case list

    public var description: String {
        switch self {
        case .value(let type): type.rawValue
        case .object(let entity): "object of \(entity)"
        case .null: "nil"
        case .list: "list"
        }
    }
}

extension Predicate {
    /// The deepest nesting of predicates and expressions a request may use. Every backend
    /// answers predicates within the limits; SQLite compiles them to SQL that its parser's small
    /// fixed stack still takes.
    public static let maximumDepth = 32
    /// The most SUBQUERYs nested inside one another (each becomes a nested SELECT in SQL).
    public static let maximumSubqueryNesting = 4
    /// The most values an `IN` list may have.
    public static let maximumListCount = 100_000

    /// Checks the predicate against `entity` and types its literals: a string compared with a
    /// date attribute becomes a date (it must be ISO 8601), an int compared with a double becomes a
    /// double, a URI compared with a relationship becomes an object reference. Typing a typed tree
    /// gives the same tree. Errors say which key path or literal is wrong and why.
    public func typed(
        for entity: ResolvedEntity, in schema: ResolvedSchema,
        storeIdentifier: UUID? = nil
    ) throws(ModelError) -> Predicate {
        try PredicateTyper(schema: schema, storeIdentifier: storeIdentifier)
            .type(self, entity: entity, variables: [:], depth: 0)
    }
}

/// The typing pass behind ``Predicate/typed(for:in:storeIdentifier:)``.
struct PredicateTyper {
    let schema: ResolvedSchema
    let storeIdentifier: UUID?

    private typealias Scope = (entity: ResolvedEntity, variables: [String: ResolvedEntity])

    /// An expression after typing: the (possibly rewritten) expression, its kind, whether it is a
    /// literal, and whether it crosses a to-many relationship.
    private struct Typed {
        var expression: Expression
        var kind: ExpressionKind
        var isLiteral: Bool
        var crossesToMany: Bool
    }

    func type(
        _ predicate: Predicate, entity: ResolvedEntity, variables: [String: ResolvedEntity],
        depth: Int
    ) throws(ModelError) -> Predicate {
        guard depth <= Predicate.maximumDepth else {
            throw ModelError(
                .resourceExhausted,
                "the predicate is nested more than \(Predicate.maximumDepth) levels deep; simplify it")
        }
        switch predicate {
        case .constant:
            return predicate
        case .and(let parts):
            return .and(
                try parts.map { (p) throws(ModelError) in
                    try type(p, entity: entity, variables: variables, depth: depth + 1)
                })
        case .or(let parts):
            return .or(
                try parts.map { (p) throws(ModelError) in
                    try type(p, entity: entity, variables: variables, depth: depth + 1)
                })
        case .not(let inner):
            return .not(try type(inner, entity: entity, variables: variables, depth: depth + 1))
        case .comparison(let comparison):
            return .comparison(try type(comparison, scope: (entity, variables), depth: depth + 1))
        }
    }

    private func type(_ c: Comparison, scope: Scope, depth: Int) throws(ModelError) -> Comparison {
        var lhs = try type(c.lhs, scope: scope, depth: depth + 1)
        var rhs = try type(c.rhs, scope: scope, depth: depth + 1)
        // The comparison's text, for error contexts only (a list may hold 100,000 values).
        let text = { Self.shortened(Predicate.comparison(c).description) }

        // Quantifiers go with a left side that crosses a to-many relationship, and only then.
        if c.modifier == .direct, lhs.crossesToMany {
            throw ModelError(
                .invalidPredicate,
                "'\(c.lhs)' crosses a to-many relationship: say ANY, ALL or NONE, or use @count",
                context: ["predicate": text()])
        }
        if c.modifier != .direct, !lhs.crossesToMany {
            throw ModelError(
                .invalidPredicate,
                "\(c.modifier.rawValue) needs a key path through a to-many relationship, but '\(c.lhs)' has none",
                context: ["predicate": text()])
        }
        if rhs.crossesToMany {
            throw ModelError(
                .invalidPredicate,
                "the right side '\(c.rhs)' crosses a to-many relationship; put it on the left with ANY, ALL or NONE",
                context: ["predicate": text()])
        }
        // Before literals are converted, so that the message names the operator, not the literal.
        if c.op.isStringOperator, !lhs.isLiteral, lhs.kind != .value(.string) {
            throw ModelError(
                .typeMismatch, "\(c.op.rawValue) compares strings, and '\(c.lhs)' is \(lhs.kind)",
                context: ["predicate": text()])
        }

        switch c.op {
        case .in, .between:
            guard case .list(let items) = rhs.expression else {
                throw ModelError(
                    .invalidPredicate,
                    "\(c.op.rawValue) needs a list on its right, such as {1, 2, 3}", context: ["predicate": text()])
            }
            guard items.count <= Predicate.maximumListCount else {
                throw ModelError(
                    .resourceExhausted,
                    "the list has \(items.count) values; at most \(Predicate.maximumListCount) are allowed",
                    context: ["predicate": text()])
            }
            if c.op == .between, items.count != 2 {
                throw ModelError(
                    .invalidPredicate, "BETWEEN needs exactly two bounds, {low, high}", context: ["predicate": text()])
            }
            guard !lhs.isLiteral else {
                throw ModelError(
                    .invalidPredicate, "the left side of \(c.op.rawValue) must be a key path",
                    context: ["predicate": text()])
            }
            var typedItems: [Expression] = []
            for item in items {
                var element = try type(item, scope: scope, depth: depth + 1)
                if element.crossesToMany {
                    throw ModelError(
                        .invalidPredicate, "'\(item)' in the list crosses a to-many relationship",
                        context: ["predicate": text()])
                }
                element = try coerce(element, to: lhs.kind, predicate: text())
                if c.op == .between {
                    try checkOrdered(lhs.kind, op: c.op, predicate: text())
                    if element.kind == .null {
                        throw ModelError(
                            .invalidPredicate, "BETWEEN bounds cannot be nil", context: ["predicate": text()])
                    }
                }
                // Each element is compared with the left side: IN as ==, BETWEEN as <= and >=.
                try checkCompatible(lhs.kind, element.kind, op: c.op == .between ? .between : .equal, predicate: text())
                typedItems.append(element.expression)
            }
            rhs.expression = .list(typedItems)
            try checkOptions(c.options, [lhs.kind], predicate: text())
            return Comparison(lhs.expression, c.op, rhs.expression, modifier: c.modifier, options: c.options)
        default:
            break
        }

        if case .list = rhs.expression {
            throw ModelError(
                .invalidPredicate, "a {…} list belongs on the right of IN or BETWEEN only",
                context: ["predicate": text()])
        }
        if lhs.isLiteral, !rhs.isLiteral {
            lhs = try coerce(lhs, to: rhs.kind, predicate: text())
        } else if !lhs.isLiteral {
            rhs = try coerce(rhs, to: lhs.kind, predicate: text())
        }
        try checkCompatible(lhs.kind, rhs.kind, op: c.op, predicate: text())
        try checkOptions(c.options, [lhs.kind, rhs.kind], predicate: text())
        return Comparison(lhs.expression, c.op, rhs.expression, modifier: c.modifier, options: c.options)
    }

    /// `[c]` and `[d]` need a string side, judged after literals took their types (a date
    /// compared with the string "2026-01-01" is not a string comparison).
    private func checkOptions(_ options: StringOptions, _ kinds: [ExpressionKind], predicate: @autoclosure () -> String)
        throws(ModelError)
    {
        guard !options.isEmpty, !kinds.contains(.value(.string)) else { return }
        throw ModelError(
            .invalidPredicate, "options \(options.suffix) apply to strings only", context: ["predicate": predicate()])
    }

    private func checkOrdered(_ kind: ExpressionKind, op: ComparisonOperator, predicate: @autoclosure () -> String)
        throws(ModelError)
    {
        switch kind {
        case .value(let t) where t.isNumeric || t == .date || t == .string || t == .uuid || t == .url: return
        default:
            throw ModelError(
                .invalidPredicate, "\(op.rawValue) cannot order values of type \(kind)",
                context: ["predicate": predicate()])
        }
    }

    private func checkCompatible(
        _ a: ExpressionKind, _ b: ExpressionKind, op: ComparisonOperator, predicate: @autoclosure () -> String
    ) throws(ModelError) {
        if op.isStringOperator {
            guard a == .value(.string), b == .value(.string) else {
                throw ModelError(
                    .typeMismatch, "\(op.rawValue) compares strings, not \(a) with \(b)",
                    context: ["predicate": predicate()])
            }
            return
        }
        if a == .null || b == .null {
            guard op == .equal || op == .notEqual else {
                throw ModelError(
                    .invalidPredicate, "nil can only be compared with == or !=", context: ["predicate": predicate()])
            }
            return
        }
        switch (a, b) {
        case (.value(let x), .value(let y)):
            let compatible = x == y || (x.isNumeric && y.isNumeric)
            guard compatible else {
                throw ModelError(
                    .typeMismatch, "cannot compare \(x.rawValue) with \(y.rawValue)",
                    context: ["predicate": predicate()])
            }
            if op.isOrdering { try checkOrdered(a, op: op, predicate: predicate()) }
            if x == .bool || x == .data || x == .json, op.isOrdering {
                throw ModelError(
                    .invalidPredicate, "\(op.rawValue) cannot order \(x.rawValue) values",
                    context: ["predicate": predicate()])
            }
        case (.object(let x), .object(let y)):
            guard op == .equal || op == .notEqual else {
                throw ModelError(
                    .invalidPredicate, "objects can only be compared with == or !=", context: ["predicate": predicate()]
                )
            }
            guard let ex = schema[x], let ey = schema[y], ex.root == ey.root else {
                throw ModelError(
                    .typeMismatch, "cannot compare an object of \(x) with an object of \(y)",
                    context: ["predicate": predicate()])
            }
        default:
            throw ModelError(.typeMismatch, "cannot compare \(a) with \(b)", context: ["predicate": predicate()])
        }
    }

    /// Converts a literal to the kind of the other side; leaves non-literals alone.
    private func coerce(_ typed: Typed, to kind: ExpressionKind, predicate: @autoclosure () -> String)
        throws(ModelError) -> Typed
    {
        guard typed.isLiteral, typed.kind != .null else { return typed }
        switch (typed.expression, kind) {
        case (.literal(let value), .value(let target)):
            if let source = value.type, source.isNumeric, target.isNumeric {
                // Numbers compare by value whatever their type: convert only where nothing is lost.
                if let converted = try? value.converted(to: target) {
                    return Typed(
                        expression: .literal(converted), kind: .value(target), isLiteral: true, crossesToMany: false)
                }
                return typed
            }
            do {
                let converted = try value.converted(to: target)
                return Typed(
                    expression: .literal(converted), kind: .value(target), isLiteral: true, crossesToMany: false)
            } catch {
                let hint = target == .date ? " (dates are ISO 8601: \"2026-01-31\" or \"2026-01-31T12:00:00Z\")" : ""
                throw ModelError(
                    .typeMismatch, "\(value.debugText) is not a valid \(target.rawValue)\(hint)",
                    context: ["predicate": predicate(), "expected": target.rawValue])
            }
        case (.literal(.string(let uri)), .object):
            let id = try PersistentIdentifier(uri: uri)
            return try coerce(
                Typed(
                    expression: .object(id), kind: .object(entity: id.entityName), isLiteral: true, crossesToMany: false
                ),
                to: kind, predicate: predicate())
        case (.object(let id), .object(let entity)):
            if let storeIdentifier, id.storeIdentifier != storeIdentifier {
                throw ModelError(
                    .invalidIdentifier, "\(id) belongs to another store", context: ["uri": id.uriRepresentation])
            }
            guard let referenced = schema[id.entityName] else { throw ModelError.unknownEntity(id.entityName) }
            guard let target = schema[entity], referenced.root == target.root else {
                throw ModelError(
                    .typeMismatch, "\(id) is an object of \(id.entityName), which cannot be an object of \(entity)",
                    context: ["predicate": predicate(), "uri": id.uriRepresentation])
            }
            return Typed(
                expression: .object(id), kind: .object(entity: id.entityName), isLiteral: true, crossesToMany: false)
        default:
            return typed
        }
    }

    private func type(_ expression: Expression, scope: Scope, depth: Int) throws(ModelError) -> Typed {
        guard depth <= Predicate.maximumDepth else {
            throw ModelError(
                .resourceExhausted,
                "the predicate is nested more than \(Predicate.maximumDepth) levels deep; simplify it")
        }
        switch expression {
        case .literal(let value):
            return Typed(
                expression: expression, kind: value.type.map { .value($0) } ?? .null, isLiteral: true,
                crossesToMany: false)
        case .object(let id):
            return try coerce(
                Typed(
                    expression: expression, kind: .object(entity: id.entityName), isLiteral: true, crossesToMany: false),
                to: .object(entity: id.entityName), predicate: "\(expression)")
        case .list:
            return Typed(expression: expression, kind: .list, isLiteral: true, crossesToMany: false)
        case .entityName(let variable):
            if let variable, scope.variables[variable] == nil {
                throw ModelError(.invalidPredicate, "variable $\(variable) is not defined here")
            }
            return Typed(expression: expression, kind: .value(.string), isLiteral: false, crossesToMany: false)
        case .keyPath(let path):
            let resolved = try schema.resolve(path, from: scope.entity, variables: scope.variables)
            let kind: ExpressionKind = resolved.attribute.map { .value($0.type) } ?? .object(entity: resolved.end.name)
            return Typed(
                expression: expression, kind: kind, isLiteral: false, crossesToMany: resolved.toManyIndex != nil)
        case .collection(let function, let path, let attributeName):
            let resolved = try schema.resolve(path, from: scope.entity, variables: scope.variables)
            guard resolved.endsAtToMany else {
                throw ModelError(
                    .invalidPredicate,
                    "\(function.rawValue) applies to a to-many relationship, and '\(path)' is not one",
                    context: ["keyPath": path.description])
            }
            if function == .count {
                guard attributeName == nil else {
                    throw ModelError(.invalidPredicate, "@count takes no attribute: write \(path).@count")
                }
                return Typed(expression: expression, kind: .value(.int), isLiteral: false, crossesToMany: false)
            }
            guard let attributeName, let attribute = resolved.end.attribute(attributeName) else {
                throw ModelError(
                    .invalidPredicate,
                    "\(function.rawValue) needs an attribute of '\(resolved.end.name)': write \(path).\(function.rawValue).<attribute>",
                    context: ["keyPath": path.description])
            }
            switch (function, attribute.type) {
            case (.sum, let t) where t.isNumeric:
                return Typed(expression: expression, kind: .value(t), isLiteral: false, crossesToMany: false)
            case (.avg, let t) where t.isNumeric:
                return Typed(
                    expression: expression, kind: .value(t == .decimal ? .decimal : .double), isLiteral: false,
                    crossesToMany: false)
            case (.min, let t) where t.isNumeric || t == .date || t == .string,
                (.max, let t) where t.isNumeric || t == .date || t == .string:
                return Typed(expression: expression, kind: .value(t), isLiteral: false, crossesToMany: false)
            default:
                throw ModelError(
                    .typeMismatch,
                    "\(function.rawValue) cannot apply to \(attribute.type.rawValue) attribute '\(attributeName)'")
            }
        case .subqueryCount(let collection, let variable, let inner):
            let resolved = try schema.resolve(collection, from: scope.entity, variables: scope.variables)
            guard resolved.endsAtToMany else {
                throw ModelError(
                    .invalidPredicate,
                    "SUBQUERY needs a to-many relationship as its collection, and '\(collection)' is not one",
                    context: ["keyPath": collection.description])
            }
            guard scope.variables.count < Predicate.maximumSubqueryNesting else {
                throw ModelError(
                    .resourceExhausted,
                    "SUBQUERYs are nested more than \(Predicate.maximumSubqueryNesting) deep; simplify the predicate")
            }
            guard scope.variables[variable] == nil else {
                throw ModelError(
                    .invalidPredicate,
                    "variable $\(variable) is already defined by an enclosing SUBQUERY; use another name")
            }
            var variables = scope.variables
            variables[variable] = resolved.end
            let typedInner = try type(inner, entity: scope.entity, variables: variables, depth: depth + 1)
            return Typed(
                expression: .subqueryCount(collection: collection, variable: variable, predicate: typedInner),
                kind: .value(.int), isLiteral: false, crossesToMany: false)
        case .arithmetic(let op, let a, let b):
            let left = try type(a, scope: scope, depth: depth + 1)
            let right = try type(b, scope: scope, depth: depth + 1)
            guard !left.crossesToMany, !right.crossesToMany else {
                throw ModelError(.invalidPredicate, "arithmetic cannot use a key path through a to-many relationship")
            }
            guard case .value(let x) = left.kind, case .value(let y) = right.kind else {
                throw ModelError(
                    .typeMismatch, "arithmetic needs numbers or dates, not \(left.kind) \(op.rawValue) \(right.kind)")
            }
            guard let result = Self.arithmeticResult(op, x, y) else {
                throw ModelError(
                    .typeMismatch,
                    "cannot compute \(x.rawValue) \(op.rawValue) \(y.rawValue); arithmetic works on int, double and date (plus or minus seconds)"
                )
            }
            return Typed(
                expression: .arithmetic(op, left.expression, right.expression), kind: .value(result),
                isLiteral: left.isLiteral && right.isLiteral, crossesToMany: false)
        }
    }

    /// Text for an error's context, cut to a readable length.
    static func shortened(_ text: String) -> String {
        text.count > 300 ? String(text.prefix(297)) + "..." : text
    }

    /// The type of `x op y`, or nil when the operation is not defined.
    static func arithmeticResult(_ op: ArithmeticOperator, _ x: AttributeType, _ y: AttributeType) -> AttributeType? {
        switch (x, y) {
        case (.int, .int): return op == .divide ? .double : .int
        case (.int, .double), (.double, .int), (.double, .double): return .double
        case (.date, .int), (.date, .double): return op == .add || op == .subtract ? .date : nil
        case (.int, .date), (.double, .date): return op == .add ? .date : nil
        case (.date, .date): return op == .subtract ? .double : nil
        default: return nil
        }
    }
}
