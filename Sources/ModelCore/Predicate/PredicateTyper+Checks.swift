import Foundation

/// The checks and conversions ``PredicateTyper`` applies to a comparison's two sides once each is
/// typed: string options, ordering, compatible kinds, and literals converted to the other side's
/// type.
extension PredicateTyper {
    /// `[c]` and `[d]` need a string side, judged after literals took their types (a date
    /// compared with the string "2026-01-01" is not a string comparison).
    func checkOptions(_ options: StringOptions, _ kinds: [ExpressionKind], predicate: @autoclosure () -> String)
        throws(ModelError)
    {
        guard !options.isEmpty, !kinds.contains(.value(.string)) else { return }
        throw ModelError(
            .invalidPredicate, "options \(options.suffix) apply to strings only", context: ["predicate": predicate()])
    }

    func checkOrdered(_ kind: ExpressionKind, op: ComparisonOperator, predicate: @autoclosure () -> String)
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

    func checkCompatible(
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
    func coerce(_ typed: Typed, to kind: ExpressionKind, predicate: @autoclosure () -> String)
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
            let referenced = try schema.entity(id.entityName)
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
}
