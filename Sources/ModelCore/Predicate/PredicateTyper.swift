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
    struct Typed {
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

    private func type(_ expression: Expression, scope: Scope, depth: Int) throws(ModelError) -> Typed {
        guard depth <= Predicate.maximumDepth else {
            throw ModelError(
                .resourceExhausted,
                "the predicate is nested more than \(Predicate.maximumDepth) levels deep; simplify it")
        }
        switch expression {
        case .literal(let value):
            // As the parser refuses `CAST("NaN", "double")`: NaN is no value a store keeps, and
            // each backend would compare it its own way.
            if case .double(let d) = value, d.isNaN { throw Self.nanLiteral }
            if case .decimal(let d) = value, d.isNaN { throw Self.nanLiteral }
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
    static let nanLiteral = ModelError(
        .invalidPredicate, "a predicate cannot compare with NaN: no store keeps NaN (compare with nil, or a number)")

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
