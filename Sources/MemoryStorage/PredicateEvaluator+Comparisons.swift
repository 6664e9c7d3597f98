import Foundation
import ModelCore

extension PredicateEvaluator {
    /// `lhs op rhs` for one left operand, two-valued: a comparison with nil on one side is true
    /// only for `==` with nil on both sides and for `!=` with nil on exactly one; every other
    /// operator is false with a nil.
    static func compare(_ lhs: Operand, _ op: ComparisonOperator, _ rhs: Operand, options: StringOptions) -> Bool {
        switch op {
        case .equal:
            return equal(lhs, rhs, options: options)
        case .notEqual:
            return !equal(lhs, rhs, options: options)
        case .in:
            guard case .list(let items) = rhs else { return false }
            return items.contains { equal(lhs, $0, options: options) }
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2,
                let low = order(lhs, bounds[0], options: options), low != .orderedAscending,
                let high = order(lhs, bounds[1], options: options), high != .orderedDescending
            else { return false }
            return true
        case .less:
            return order(lhs, rhs, options: options) == .orderedAscending
        case .lessOrEqual:
            guard let result = order(lhs, rhs, options: options) else { return false }
            return result != .orderedDescending
        case .greater:
            return order(lhs, rhs, options: options) == .orderedDescending
        case .greaterOrEqual:
            guard let result = order(lhs, rhs, options: options) else { return false }
            return result != .orderedAscending
        case .contains, .beginsWith, .endsWith, .like:
            guard case .value(.string(let text)) = lhs, case .value(.string(let pattern)) = rhs else { return false }
            switch op {
            case .contains: return TextComparison.contains(text, pattern, options: options)
            case .beginsWith: return TextComparison.hasPrefix(text, pattern, options: options)
            case .endsWith: return TextComparison.hasSuffix(text, pattern, options: options)
            default: return TextComparison.like(text, pattern, options: options)
            }
        }
    }

    /// Equality: nil equals only nil; objects by key within their hierarchy; values by
    /// `Value.compare`, strings folded first when options are given.
    static func equal(_ lhs: Operand, _ rhs: Operand, options: StringOptions) -> Bool {
        if lhs.isNil || rhs.isNil { return lhs.isNil && rhs.isNil }
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)):
            return a == b
        case (.value, .value):
            return order(lhs, rhs, options: options) == .orderedSame
        default:
            return false
        }
    }

    /// The order of two non-nil values, or nil when either is nil or they have no order.
    static func order(_ lhs: Operand, _ rhs: Operand, options: StringOptions) -> ComparisonResult? {
        guard case .value(let a) = lhs, case .value(let b) = rhs, !a.isNull, !b.isNull else { return nil }
        if !options.isEmpty, case .string(let x) = a, case .string(let y) = b {
            return TextComparison.compare(x, y, options: options)
        }
        return Value.compare(a, b)
    }
}
