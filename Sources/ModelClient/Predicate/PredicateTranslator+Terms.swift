import ModelCore

extension PredicateTranslator {
    /// `base[keyPath:]`: a property of an object, `count` or `isEmpty` of a to-many relationship
    /// or a filtered one, `isEmpty` of a string, or a property of a captured value.
    func member(_ keyPath: AnyKeyPath, of base: Term, source: Any) throws(ModelError) -> Term {
        switch base {
        case .value(let value):
            guard let unwrapped = unwrap(value) else { return .value(value) }
            return .value(unwrapped[keyPath: keyPath] as Any)
        case .filter(let collection, let variable, let predicate, let countKeyPath, let isEmptyKeyPath):
            let count = ModelCore.Expression.subqueryCount(
                collection: collection, variable: variable, predicate: predicate)
            if keyPath == countKeyPath { return .expression(count) }
            if keyPath == isEmptyKeyPath {
                return .predicate(.comparison(Comparison(count, .equal, .literal(.int(0)))))
            }
        case .path(let path):
            switch path.reach {
            case .object(let info):
                if keyPath == info.type.persistentModelIDKeyPath { return base }
                if let identity = info.entityMetadata.identity, keyPath == identity { return base }
                guard let property = info.property(for: keyPath) else {
                    throw ModelError(
                        .invalidPredicate,
                        "#Predicate reads \(keyPath.readableName), which is not a stored property of \(info.entityName) (computed and @Transient properties aren't in the store)",
                        context: ["entity": info.entityName])
                }
                switch property.kind {
                case .attribute: return .path(path.appending(property.name, .attribute(property)))
                case .toOne(let destination, _):
                    return .path(path.appending(property.name, .object(ModelTypeInfo.known(destination))))
                case .toMany: return .path(path.appending(property.name, .toMany(property)))
                }
            case .toMany(let property):
                guard case .toMany(_, let collection, _) = property.kind else { break }
                let count = ModelCore.Expression.collection(.count, path.path, attribute: nil)
                if keyPath == collection.countKeyPath { return .expression(count) }
                if keyPath == collection.isEmptyKeyPath {
                    return .predicate(.comparison(Comparison(count, .equal, .literal(.int(0)))))
                }
            case .attribute(let property):
                if property.codec?.type == .string, keyPath == \String.isEmpty {
                    return .predicate(.comparison(Comparison(.keyPath(path.path), .equal, .literal(.string("")))))
                }
            }
        default:
            break
        }
        throw ModelError(
            .invalidPredicate,
            "#Predicate reads \(keyPath.readableName), which modeld can't translate into a store query: the store can read stored properties, and count and isEmpty of to-many relationships"
        )
    }

    /// `lhs op rhs`, with values turned into the attribute's stored form.
    func comparison(_ lhs: Term, _ op: ComparisonOperator, _ rhs: Term, source: Any) throws(ModelError)
        -> ModelCore.Predicate
    {
        if case .coalesce(let path, let fallback) = lhs {
            return try coalesced(path, fallback, op, rhs, source: source)
        }
        if case .coalesce(let path, let fallback) = rhs {
            return try coalesced(path, fallback, op.flipped, lhs, source: source)
        }
        if let test = try optionalTest(lhs, op, rhs) { return test }
        if let test = try optionalTest(rhs, op, lhs) { return test }
        if case .value(let left) = lhs, case .value(let right) = rhs {
            return .constant(try evaluate(left, op, right, codec: nil))
        }
        if case .path(let path) = lhs, case .toMany = path.reach { throw toManyComparison(source) }
        if case .path(let path) = rhs, case .toMany = path.reach { throw toManyComparison(source) }
        let codec = Self.codec(of: lhs) ?? Self.codec(of: rhs)
        let left = try expression(lhs, codec: codec, from: source),
            right = try expression(rhs, codec: codec, from: source)
        // Literals go on the right.
        if case .keyPath = right, !isKeyPath(left) {
            return .comparison(Comparison(right, op.flipped, left))
        }
        return .comparison(Comparison(left, op, right))
    }

    /// `optional?.test() == true` (or `!= false`): the test, which the store finds false when the
    /// optional is nil, as Swift does. `== false` is refused, as nil would differ.
    private func optionalTest(_ test: Term, _ op: ComparisonOperator, _ other: Term) throws(ModelError) -> ModelCore
        .Predicate?
    {
        guard case .predicate(let predicate) = test, case .value(let value) = other, let bool = unwrap(value) as? Bool
        else { return nil }
        if (op == .equal && bool) || (op == .notEqual && !bool) { return predicate }
        throw ModelError(
            .invalidPredicate,
            "#Predicate compares a test with `\(op == .equal ? "==" : "!=") \(bool)`, which differs from the store's answer when an optional in it is nil: use `== true`, or negate the test with !"
        )
    }

    private func isKeyPath(_ expression: ModelCore.Expression) -> Bool {
        if case .keyPath = expression { return true }
        return false
    }

    private func toManyComparison(_ source: Any) -> ModelError {
        ModelError(
            .invalidPredicate,
            "#Predicate compares a to-many relationship itself (\(Self.describe(source))): test its objects with contains(where:), allSatisfy or filter, or its count"
        )
    }

    /// `(path ?? fallback) op other`: the path's value when it has one, else the fallback's.
    private func coalesced(_ path: PathTerm, _ fallback: Term, _ op: ComparisonOperator, _ other: Term, source: Any)
        throws(ModelError) -> ModelCore.Predicate
    {
        guard case .value(let fallbackValue) = fallback, case .value(let otherValue) = other else {
            throw ModelError(
                .invalidPredicate,
                "#Predicate compares `a ?? b` with something other than a value: the store can only do that when b and the other side are values"
            )
        }
        let codec = Self.codec(of: .path(path))
        let isNil = ModelCore.Predicate.comparison(Comparison(.keyPath(path.path), .equal, .literal(.null)))
        let withValue = ModelCore.Predicate.and([.not(isNil), try comparison(.path(path), op, other, source: source)])
        return try evaluate(fallbackValue, op, otherValue, codec: codec) ? .or([withValue, isNil]) : withValue
    }

    /// Compares two Swift values as the store would.
    private func evaluate(_ lhs: Any, _ op: ComparisonOperator, _ rhs: Any, codec: AttributeCodec?) throws(ModelError)
        -> Bool
    {
        guard case .literal(let left) = try literal(lhs, codec: codec),
            case .literal(let right) = try literal(rhs, codec: codec)
        else {
            throw ModelError(
                .invalidPredicate,
                "#Predicate compares two objects given as values; compare a key path with a value instead")
        }
        let order = Value.compare(left, right)
        switch op {
        case .equal: return Value.equalForPredicate(left, right)
        case .notEqual: return !Value.equalForPredicate(left, right)
        case .less: return order == .orderedAscending
        case .lessOrEqual: return order == .orderedAscending || order == .orderedSame
        case .greater: return order == .orderedDescending
        case .greaterOrEqual: return order == .orderedDescending || order == .orderedSame
        default: throw ModelError(.invalidPredicate, "#Predicate applies \(op.rawValue) to two values")
        }
    }

    /// `sequence.contains { … }`-style tests: a SUBQUERY over a to-many relationship, with the
    /// closure's variable bound to each related object.
    func subquery(
        _ sequence: Any, variable: PredicateExpressions.VariableID, test: Any,
        negated: Bool = false
    ) throws(ModelError) -> (PropertyPath, String, ModelCore.Predicate) {
        let collection = try term(sequence)
        guard case .path(let path) = collection, case .toMany(let property) = path.reach,
            let destination = property.destination
        else {
            throw ModelError(
                .invalidPredicate,
                "#Predicate tests the elements of \(Self.describe(sequence)), which is not a to-many relationship: the store can test related objects, not the elements of a stored array"
            )
        }
        let name = newVariable()
        bind(
            variable,
            to: .path(
                PathTerm(path: PropertyPath([], variable: name), reach: .object(ModelTypeInfo.known(destination)))))
        let inner = try predicate(test)
        return (path.path, name, negated ? .not(inner) : inner)
    }

    /// The elements of a captured array or set, as literals.
    func list(_ value: Any, codec: AttributeCodec?) throws(ModelError) -> ModelCore.Expression {
        guard let unwrapped = unwrap(value) else { return .list([]) }
        let mirror = Mirror(reflecting: unwrapped)
        guard mirror.displayStyle == .collection || mirror.displayStyle == .set else {
            throw ModelError(
                .invalidPredicate,
                "#Predicate tests membership in a \(type(of: unwrapped)), which is not an array or a set")
        }
        return .list(try mirror.children.map { child throws(ModelError) in try literal(child.value, codec: codec) })
    }
}

extension ComparisonOperator {
    /// The operator with its sides swapped (`a < b` is `b > a`).
    var flipped: ComparisonOperator {
        switch self {
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: self
        }
    }
}

extension PersistentModel {
    /// `\Self.persistentModelID`, to recognise it in predicates.
    static var persistentModelIDKeyPath: AnyKeyPath { \Self.persistentModelID }
}
