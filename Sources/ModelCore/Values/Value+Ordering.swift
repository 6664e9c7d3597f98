import Foundation

extension Value {
    /// The one ordering every backend uses, for sorting and for `<`, `==` and friends in
    /// predicates: ``null`` before everything; numbers (int, double, decimal) by value; strings,
    /// URLs and JSON by their UTF-8 bytes (SQLite's BINARY collation); dates by instant; data by
    /// bytes; UUIDs by their lowercase text; false before true.
    ///
    /// Returns nil when the two values are of kinds that have no order between them.
    public static func compare(_ lhs: Value, _ rhs: Value) -> ComparisonResult? {
        switch (lhs, rhs) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        case (.string(let a), .string(let b)): return TextComparison.compare(a, b)
        case (.json(let a), .json(let b)): return TextComparison.compare(a, b)
        case (.url(let a), .url(let b)): return TextComparison.compare(a.absoluteString, b.absoluteString)
        case (.int(let a), .int(let b)): return order(a, b)
        case (.double(let a), .double(let b)): return order(a, b)
        case (.int(let a), .double(let b)): return compareExactly(a, b)
        case (.double(let a), .int(let b)): return compareExactly(b, a).reversed
        case (.decimal(let a), .decimal(let b)): return order(a, b)
        case (.decimal(let a), .int(let b)): return order(a, Decimal(b))
        case (.int(let a), .decimal(let b)): return order(Decimal(a), b)
        case (.decimal(let a), .double(let b)): return order(NSDecimalNumber(decimal: a).doubleValue, b)
        case (.double(let a), .decimal(let b)): return order(a, NSDecimalNumber(decimal: b).doubleValue)
        case (.bool(let a), .bool(let b)): return order(a ? 1 : 0, b ? 1 : 0)
        case (.date(let a), .date(let b)): return order(a, b)
        case (.data(let a), .data(let b)): return compareBytes(a, b)
        case (.uuid(let a), .uuid(let b)):
            return TextComparison.compare(a.uuidString.lowercased(), b.uuidString.lowercased())
        default: return nil
        }
    }

    /// Equality as predicates see it: `1 == 1.0`, and strings byte for byte.
    public static func equalForPredicate(_ lhs: Value, _ rhs: Value) -> Bool {
        compare(lhs, rhs) == .orderedSame
    }

    static func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
        a < b ? .orderedAscending : (b < a ? .orderedDescending : .orderedSame)
    }

    /// Compares an integer with a double exactly, as SQLite does (no rounding of the integer).
    static func compareExactly(_ i: Int64, _ d: Double) -> ComparisonResult {
        if d.isNaN { return .orderedDescending }
        if d >= 9_223_372_036_854_775_808.0 { return .orderedAscending }
        if d < -9_223_372_036_854_775_808.0 { return .orderedDescending }
        let whole = d.rounded(.towardZero)
        let wholeInt = Int64(whole)
        if i != wholeInt { return i < wholeInt ? .orderedAscending : .orderedDescending }
        let fraction = d - whole
        return fraction > 0 ? .orderedAscending : (fraction < 0 ? .orderedDescending : .orderedSame)
    }

    static func compareBytes(_ a: Data, _ b: Data) -> ComparisonResult {
        if a.lexicographicallyPrecedes(b) { return .orderedAscending }
        if b.lexicographicallyPrecedes(a) { return .orderedDescending }
        return .orderedSame
    }
}

extension ComparisonResult {
    /// The result with its sides swapped.
    public var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: .orderedDescending
        case .orderedDescending: .orderedAscending
        case .orderedSame: .orderedSame
        }
    }
}
