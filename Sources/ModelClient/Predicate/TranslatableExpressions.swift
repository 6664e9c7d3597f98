import ModelCore

// The nodes of Foundation's `PredicateExpressions` that have a meaning in the store. Every other
// node is refused by name (``PredicateTranslator/unsupported(_:)``).

extension PredicateExpressions.Variable: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term { try t.binding(key) }
}

extension PredicateExpressions.Value: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term { .value(value) }
}

extension PredicateExpressions.NilLiteral: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term { .nilLiteral }
}

extension PredicateExpressions.KeyPath: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        try t.member(keyPath, of: t.term(root), source: self)
    }
}

extension PredicateExpressions.Equal: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        .predicate(try t.comparison(t.term(lhs), .equal, t.term(rhs), source: self))
    }
}

extension PredicateExpressions.NotEqual: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        .predicate(try t.comparison(t.term(lhs), .notEqual, t.term(rhs), source: self))
    }
}

extension PredicateExpressions.Comparison: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let operation: ComparisonOperator =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            }
        return .predicate(try t.comparison(t.term(lhs), operation, t.term(rhs), source: self))
    }
}

extension PredicateExpressions.Conjunction: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        var parts: [ModelCore.Predicate] = []
        for side in [try t.predicate(lhs), try t.predicate(rhs)] {
            if case .and(let inner) = side { parts += inner } else { parts.append(side) }
        }
        return .predicate(.and(parts))
    }
}

extension PredicateExpressions.Disjunction: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        var parts: [ModelCore.Predicate] = []
        for side in [try t.predicate(lhs), try t.predicate(rhs)] {
            if case .or(let inner) = side { parts += inner } else { parts.append(side) }
        }
        return .predicate(.or(parts))
    }
}

extension PredicateExpressions.Negation: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        .predicate(.not(try t.predicate(wrapped)))
    }
}

extension PredicateExpressions.Arithmetic: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let operation: ArithmeticOperator =
            switch op {
            case .add: .add
            case .subtract: .subtract
            case .multiply: .multiply
            }
        return .expression(
            .arithmetic(
                operation, try t.expression(t.term(lhs), codec: nil, from: lhs),
                try t.expression(t.term(rhs), codec: nil, from: rhs)))
    }
}

extension PredicateExpressions.FloatDivision: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        .expression(
            .arithmetic(
                .divide, try t.expression(t.term(lhs), codec: nil, from: lhs),
                try t.expression(t.term(rhs), codec: nil, from: rhs)))
    }
}

extension PredicateExpressions.UnaryMinus: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        .expression(
            .arithmetic(.subtract, .literal(.int(0)), try t.expression(t.term(wrapped), codec: nil, from: wrapped)))
    }
}

extension PredicateExpressions.OptionalFlatMap: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let base = try t.term(wrapped)
        switch base {
        case .nilLiteral:
            return .nilLiteral
        case .value(let value):
            guard let unwrapped = unwrap(value) else { return .nilLiteral }
            t.bind(variable.key, to: .value(unwrapped))
        case .path:
            t.bind(variable.key, to: base)
        default:
            throw PredicateTranslator.unsupported(wrapped)
        }
        return try t.term(transform)
    }
}

extension PredicateExpressions.ForcedUnwrap: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term { try t.term(inner) }
}

extension PredicateExpressions.NilCoalesce: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let value = try t.term(lhs), fallback = try t.term(rhs)
        switch value {
        case .path(let path): return .coalesce(path, fallback)
        case .value(let captured): return unwrap(captured) == nil ? fallback : value
        case .nilLiteral: return fallback
        case .predicate(let test):
            // `optional?.test() ?? false`: the store's test is false when the optional is nil.
            if case .value(let captured) = fallback, unwrap(captured) as? Bool == false { return .predicate(test) }
            throw ModelError(
                .invalidPredicate,
                "#Predicate uses `?? true` after an optional test; the store can translate `?? false` (or `== true`) only: rewrite it as `x == nil || x!.test`"
            )
        default: throw PredicateTranslator.unsupported(self)
        }
    }
}

extension PredicateExpressions.CollectionContainsCollection: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        try t.stringTest(base, .contains, other, source: self)
    }
}

extension PredicateExpressions.SequenceStartsWith: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        try t.stringTest(base, .beginsWith, prefix, source: self)
    }
}

extension PredicateExpressions.SequenceContains: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let collection = try t.term(sequence), member = try t.term(element)
        switch collection {
        case .value(let values):
            let codec = PredicateTranslator.codec(of: member)
            let subject = try t.expression(member, codec: codec, from: element)
            return .predicate(.comparison(Comparison(subject, .in, try t.list(values, codec: codec))))
        case .path(let path):
            guard case .toMany = path.reach, case .value(let object) = member else { break }
            let name = t.newVariable()
            let test = ModelCore.Predicate.comparison(
                Comparison(.keyPath(PropertyPath([], variable: name)), .equal, try t.literal(object, codec: nil)))
            return .predicate(
                .comparison(
                    Comparison(
                        .subqueryCount(collection: path.path, variable: name, predicate: test), .greater,
                        .literal(.int(0)))))
        default:
            break
        }
        throw ModelError(
            .invalidPredicate,
            "#Predicate uses contains(_:) on \(PredicateTranslator.describe(sequence)): the store can test membership in a captured array or set, or whether a to-many relationship holds a given object (a stored array is JSON, which the store can't search)"
        )
    }
}

extension PredicateExpressions.SequenceContainsWhere: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let (collection, name, test) = try t.subquery(sequence, variable: variable.key, test: self.test)
        return .predicate(
            .comparison(
                Comparison(
                    .subqueryCount(collection: collection, variable: name, predicate: test), .greater, .literal(.int(0))
                )))
    }
}

extension PredicateExpressions.SequenceAllSatisfy: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let (collection, name, test) = try t.subquery(sequence, variable: variable.key, test: self.test, negated: true)
        return .predicate(
            .comparison(
                Comparison(
                    .subqueryCount(collection: collection, variable: name, predicate: test), .equal, .literal(.int(0))))
        )
    }
}

extension PredicateExpressions.Filter: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        let (collection, name, test) = try t.subquery(sequence, variable: variable.key, test: filter)
        return .filter(
            collection: collection, variable: name, predicate: test,
            countKeyPath: \[LHS.Output.Element].count, isEmptyKeyPath: \[LHS.Output.Element].isEmpty)
    }
}

extension PredicateExpressions.ClosedRange: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        .range(lower: try t.term(lower), upper: try t.term(upper), isClosed: true)
    }
}

extension PredicateExpressions.Range: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        .range(lower: try t.term(lower), upper: try t.term(upper), isClosed: false)
    }
}

extension PredicateExpressions.RangeExpressionContains: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        var bounds = try t.term(range)
        if case .value(let value) = bounds, let captured = unwrap(value) as? any RangeBounds {
            bounds = .range(
                lower: .value(captured.lowerValue), upper: .value(captured.upperValue), isClosed: captured.isClosed)
        }
        guard case .range(let lower, let upper, let isClosed) = bounds else {
            throw PredicateTranslator.unsupported(range)
        }
        let subject = try t.term(element)
        if isClosed {
            let codec = PredicateTranslator.codec(of: subject)
            return .predicate(
                .comparison(
                    Comparison(
                        try t.expression(subject, codec: codec, from: element), .between,
                        .list([
                            try t.expression(lower, codec: codec, from: range),
                            try t.expression(upper, codec: codec, from: range),
                        ]))))
        }
        return .predicate(
            .and([
                try t.comparison(subject, .greaterOrEqual, lower, source: self),
                try t.comparison(subject, .less, upper, source: self),
            ]))
    }
}

extension PredicateExpressions.TypeCheck: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        guard case .path(let path) = try t.term(input), case .object = path.reach, path.path.components.isEmpty,
            let desired = Desired.self as? any PersistentModel.Type,
            let info = t.types.info(forEntity: String(describing: desired))
        else {
            throw ModelError(
                .invalidPredicate,
                "#Predicate tests `is \(Desired.self)` on something other than the object being fetched or a contains(where:) variable"
            )
        }
        let names = t.types.entityNames(kindOf: info).map { ModelCore.Expression.literal(.string($0)) }
        return .predicate(.comparison(Comparison(.entityName(variable: path.path.variable), .in, .list(names))))
    }
}

extension PredicateExpressions.ConditionalCast: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        throw PredicateTranslator.cast(to: Desired.self, "as?")
    }
}

extension PredicateExpressions.ForceCast: TranslatableExpression {
    func term(in t: PredicateTranslator) throws(ModelError) -> Term {
        throw PredicateTranslator.cast(to: Desired.self, "as!")
    }
}

/// `ClosedRange` and `Range` values captured by a predicate.
protocol RangeBounds {
    var lowerValue: Any { get }
    var upperValue: Any { get }
    var isClosed: Bool { get }
}

extension Swift.ClosedRange: RangeBounds {
    var lowerValue: Any { lowerBound }
    var upperValue: Any { upperBound }
    var isClosed: Bool { true }
}

extension Swift.Range: RangeBounds {
    var lowerValue: Any { lowerBound }
    var upperValue: Any { upperBound }
    var isClosed: Bool { false }
}

extension PredicateTranslator {
    /// `attribute CONTAINS value`, `attribute BEGINSWITH value`, for strings.
    func stringTest(_ base: Any, _ op: ComparisonOperator, _ other: Any, source: Any) throws(ModelError) -> Term {
        let subject = try term(base), argument = try term(other)
        guard case .path(let path) = subject, case .attribute(let property) = path.reach,
            property.codec?.type == .string,
            case .value = argument
        else {
            throw ModelError(
                .invalidPredicate,
                "#Predicate uses \(PredicateTranslator.describe(source)) on something other than a String attribute and a value; the store can test stored strings against values"
            )
        }
        return .predicate(try comparison(subject, op, argument, source: source))
    }

    /// Casts are refused: a fetch of a class tests its own stored properties, and `is` tests the
    /// class of an object.
    static func cast(to desired: Any.Type, _ spelling: String) -> ModelError {
        ModelError(
            .invalidPredicate,
            "#Predicate casts with `\(spelling) \(desired)`, which modeld can't translate into a store query: test the class with `is \(desired)`, and fetch \(desired) itself to test the properties it adds",
            context: ["construct": spelling == "as?" ? "ConditionalCast" : "ForceCast"])
    }
}
