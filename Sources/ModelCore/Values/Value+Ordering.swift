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
        case (.decimal(let a), .double(let b)): return compareExactly(a, b)
        case (.double(let a), .decimal(let b)): return compareExactly(b, a).reversed
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

    /// Compares a decimal with a double exactly where the double's value fits in a decimal (38
    /// digits: every integral double below 1e38, and fractions of few binary digits), and through
    /// the decimal's nearest double otherwise.
    static func compareExactly(_ a: Decimal, _ b: Double) -> ComparisonResult {
        if b.isNaN { return .orderedDescending }
        if b == .infinity { return .orderedAscending }
        if b == -.infinity { return .orderedDescending }
        guard let exact = exactDecimal(b) else { return order(NSDecimalNumber(decimal: a).doubleValue, b) }
        return order(a, exact)
    }

    /// The exact value of a finite double as a decimal, or nil when it needs more than 38 digits.
    static func exactDecimal(_ d: Double) -> Decimal? {
        if d == 0 { return 0 }
        if d.rounded(.towardZero) == d {
            guard abs(d) < 1e38, let whole = Int128(exactly: d) else { return nil }
            return Decimal(string: String(whole), locale: Locale(identifier: "en_US_POSIX"))
        }
        // d = m × 2^-k = (m × 5^k) × 10^-k, with m odd.
        var m = Int128(d.significandBitPattern) | (d.isNormal ? Int128(1) << 52 : 0)
        var k = 52 - Int(d.exponent)
        let zeros = m.trailingZeroBitCount
        m >>= zeros
        k -= zeros
        guard k > 0, k <= 40 else { return nil }
        var scaled = m
        for _ in 0..<k {
            let (product, overflow) = scaled.multipliedReportingOverflow(by: 5)
            guard !overflow else { return nil }
            scaled = product
        }
        let digits = String(scaled.magnitude)
        guard digits.count <= 38, let significand = Decimal(string: digits, locale: Locale(identifier: "en_US_POSIX"))
        else { return nil }
        return Decimal(sign: d < 0 ? .minus : .plus, exponent: -k, significand: significand)
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
