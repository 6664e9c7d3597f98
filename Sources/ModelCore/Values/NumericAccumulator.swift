import Foundation

/// Sums and averages of attribute values, the same in every backend whatever order the values
/// arrive in: ints are added exactly (a sum beyond the range of Int64 becomes a double), doubles
/// are added exactly and rounded once (Shewchuk's algorithm, as Python's `math.fsum`, with the
/// largest values apart so that no partial sum overflows), decimals are added exactly
/// (``ExactDecimal`` once `Decimal` would round) and read into a `Decimal` once. Nil and
/// non-numeric values are ignored. A double sum with an infinity among the values is that
/// infinity; one that is NaN (an infinity of each sign among the values) is nil, as SQLite's NaN
/// is NULL: no value is ever NaN.
///
/// The memory backend feeds it directly; the SQLite backend calls it from its `modeld_sum` and
/// `modeld_avg` aggregate functions.
public struct NumericAccumulator: Sendable {
    /// How many non-nil numeric values were added.
    public private(set) var count = 0
    private var integerSum: Int128 = 0
    /// Non-overlapping partial sums whose exact total is the sum of the doubles below 2^960 in
    /// magnitude added so far.
    private var partials: [Double] = []
    /// The same for the doubles of 2^960 or more, each scaled by 2^-600 (exactly: a power of
    /// two), so that no partial sum overflows unless the whole sum does (1e308 + 1e308 - 1e308 is
    /// 1e308 in every order).
    private var scaledPartials: [Double] = []
    /// The infinities among the doubles: nil for none, the infinity when all are of one sign,
    /// NaN when both signs came (the sum is then that, whatever the finite values).
    private var infinity: Double?
    /// The infinity a partial sum overflowed to (never, short of 2^63 values near the largest
    /// double, with the large values scaled).
    private var overflow: Double?
    /// The decimals' sum while Foundation's `Decimal` holds it exactly.
    private var decimalSum = Decimal.zero
    /// The decimals' exact sum, once adding in `Decimal` would have rounded.
    private var exactDecimalSum: ExactDecimal?

    public init() {}

    /// Adds one value; nil and non-numeric values are ignored.
    public mutating func add(_ value: Value) {
        switch value {
        case .int(let v):
            integerSum += Int128(v)
        case .double(let v):
            if v.isInfinite {
                infinity = infinity == nil || infinity == v ? v : .nan
            } else if v.isNaN {
                infinity = .nan
            } else if abs(v) >= Self.large {
                if !Self.addExactly(v * Self.scaleDown, to: &scaledPartials) {
                    overflow = v < 0 ? -.infinity : .infinity
                }
            } else if !Self.addExactly(v, to: &partials) {
                overflow = v < 0 ? -.infinity : .infinity
            }
        case .decimal(let v):
            addDecimal(v)
        default:
            return
        }
        count += 1
    }

    /// The sum as a value of `type` (int, double or decimal), or nil when nothing was added.
    /// An int sum outside Int64's range is returned as a double; a NaN double sum is nil.
    public func sum(as type: AttributeType) -> Value {
        guard count > 0 else { return .null }
        switch type {
        case .int:
            if let exact = Int64(exactly: integerSum) { return .int(exact) }
            return .double(Double(integerSum))
        case .decimal: return .decimal(exactDecimalSum.flatMap(\.decimal) ?? decimalSum)
        default: return Self.number(doubleSum)
        }
    }

    /// The average: a double for ints and doubles, a decimal for decimals; nil when nothing was
    /// added, and for a NaN double average.
    public func average(as type: AttributeType) -> Value {
        guard count > 0 else { return .null }
        switch type {
        case .int: return .double(Double(integerSum) / Double(count))
        case .decimal:
            return .decimal(
                (exactDecimalSum ?? ExactDecimal(decimalSum)).quotient(by: count) ?? decimalSum / Decimal(count))
        default: return Self.number(doubleSum / Double(count))
        }
    }

    /// Adds a decimal in Foundation's `Decimal` while the sum stays exact there (38 digits),
    /// then exactly (``ExactDecimal``): {B, 0.4, 0.4, -B} with B of 38 nines sums to 0.8, as
    /// PostgreSQL's `numeric` sums, not to 0 (each 0.4 lost against B).
    private mutating func addDecimal(_ value: Decimal) {
        if var exact = exactDecimalSum {
            exact.add(ExactDecimal(value))
            exactDecimalSum = exact
            return
        }
        var result = Decimal.zero, sum = decimalSum, added = value
        if NSDecimalAdd(&result, &sum, &added, .plain) == .noError {
            decimalSum = result
        } else {
            var exact = ExactDecimal(decimalSum)
            exact.add(ExactDecimal(value))
            exactDecimalSum = exact
        }
    }

    /// `value` as a double, or nil for NaN.
    private static func number(_ value: Double) -> Value { value.isNaN ? .null : .double(value) }

    /// Values of this magnitude or more are added scaled (``scaledPartials``).
    private static let large = 0x1p960
    private static let scaleDown = 0x1p-600
    private static let scaleUp = 0x1p600

    /// Adds `value` to the non-overlapping `partials` exactly (Shewchuk); false when a partial
    /// sum overflowed (the partials are then of no use: the caller gives them up).
    private static func addExactly(_ value: Double, to partials: inout [Double]) -> Bool {
        var x = value
        var kept = 0
        for index in partials.indices {
            var y = partials[index]
            if abs(x) < abs(y) { swap(&x, &y) }
            let high = x + y
            let low = y - (high - x)
            if low != 0 {
                partials[kept] = low
                kept += 1
            }
            x = high
        }
        guard x.isFinite else { return false }
        partials.removeSubrange(kept...)
        partials.append(x)
        return true
    }

    /// The exact sum of the doubles, rounded once: the scaled partials back at their size, with
    /// the others; past the largest double, the infinity of the sum's sign.
    private var doubleSum: Double {
        if let infinity { return infinity }
        if let overflow { return overflow }
        guard let largest = scaledPartials.last else { return Self.total(partials) }
        let overflow = largest < 0 ? -Double.infinity : .infinity
        var merged: [Double] = []
        for partial in scaledPartials {
            let back = partial * Self.scaleUp
            guard back.isFinite, Self.addExactly(back, to: &merged) else { return overflow }
        }
        for partial in partials {
            guard Self.addExactly(partial, to: &merged) else { return overflow }
        }
        return Self.total(merged)
    }

    /// The correctly rounded total of `partials` (the final step of `math.fsum`).
    private static func total(_ partials: [Double]) -> Double {
        guard var n = partials.indices.last else { return 0 }
        var high = partials[n]
        var low = 0.0
        while n > 0 {
            let x = high
            n -= 1
            let y = partials[n]
            high = x + y
            low = y - (high - x)
            if low != 0 { break }
        }
        if n > 0, (low < 0 && partials[n - 1] < 0) || (low > 0 && partials[n - 1] > 0) {
            let y = low * 2
            let x = high + y
            if y == x - high { high = x }
        }
        return high
    }
}
