import Foundation

/// A decimal number held exactly, however many digits it needs: a sign, a magnitude (a big
/// integer in 32-bit limbs, least significant first) and a power of ten. ``NumericAccumulator``
/// sums decimals in one once Foundation's `Decimal` (38 digits) would round, so that a sum is
/// exact and rounded once, whatever the order of its values, as PostgreSQL's `numeric` sums.
struct ExactDecimal: Sendable, Equatable {
    private(set) var isNegative = false
    /// The magnitude's limbs, least significant first, without high zero limbs (zero is empty).
    private(set) var limbs: [UInt32] = []
    private(set) var exponent = 0

    init() {}

    /// `value` exactly, read from its plain text (Foundation's `Decimal` shows every digit).
    init(_ value: Decimal) {
        var text = value.description
        if text.hasPrefix("-") {
            isNegative = true
            text.removeFirst()
        }
        var fraction = 0
        var seenPoint = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                seenPoint = true
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { continue }
            multiplyAdd(10, UInt32(byte - UInt8(ascii: "0")))
            if seenPoint { fraction += 1 }
        }
        exponent = -fraction
        if limbs.isEmpty { isNegative = false }
    }

    var isZero: Bool { limbs.isEmpty }

    /// The number with the other sign.
    var negated: ExactDecimal {
        var copy = self
        copy.isNegative = !isZero && !isNegative
        return copy
    }

    /// Adds `other` exactly.
    mutating func add(_ other: ExactDecimal) {
        guard !other.isZero else { return }
        guard !isZero else { return self = other }
        var other = other
        // Both at the smaller power of ten.
        while exponent > other.exponent { scaleUp() }
        while other.exponent > exponent { other.scaleUp() }
        if isNegative == other.isNegative {
            limbs = Self.sum(limbs, other.limbs)
        } else if Self.compare(limbs, other.limbs) >= 0 {
            limbs = Self.difference(limbs, other.limbs)
        } else {
            limbs = Self.difference(other.limbs, limbs)
            isNegative = other.isNegative
        }
        if limbs.isEmpty { isNegative = false }
    }

    /// The plain text of the number (`-12.5`, `0.001`, `1000`), every digit shown, as
    /// PostgreSQL writes a `numeric`.
    var text: String {
        guard !isZero else { return "0" }
        var digits = decimalDigits
        if exponent > 0 { digits += String(repeating: "0", count: exponent) }
        if exponent < 0 {
            let fraction = -exponent
            if digits.count <= fraction { digits = String(repeating: "0", count: fraction - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -fraction))
        }
        return (isNegative ? "-" : "") + digits
    }

    /// The number as Foundation reads its text: the digits `Decimal` cannot hold are cut off, as
    /// when PostgreSQL's exact `numeric` is read into a `Decimal`.
    var decimal: Decimal? { Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) }

    /// `self / count` as PostgreSQL's `modeld_decimal_quotient` computes it: the quotient rounded
    /// (half away from zero) to 120 decimal places, then cut to 39 significant digits (38 when 39
    /// would not fit in a 128-bit mantissa). Foundation's own `Decimal` division keeps fewer
    /// digits, a varying number of them, so every backend's average is this one.
    func quotient(by count: Int) -> Decimal? {
        guard count > 0, let divisor = UInt32(exactly: count) else { return nil }
        var scaled = self
        // round(sum, 120): at most 120 decimal places, rounded half away from zero once.
        if scaled.exponent < -120 {
            for _ in 0..<(-120 - scaled.exponent - 1) { _ = Self.divide(&scaled.limbs, by: 10) }
            scaled.divideRounding(by: 10)
            scaled.exponent = -120
        }
        while scaled.exponent > -120 { scaled.scaleUp() }
        scaled.divideRounding(by: divisor)
        guard !scaled.isZero else { return 0 }
        var digits = scaled.decimalDigits
        var droppedExponent = 0
        if digits.count > 39 {
            droppedExponent = digits.count - 39
            digits.removeLast(droppedExponent)
        }
        if digits.count == 39, digits > "340282366920938463463374607431768211455" {
            digits.removeLast()
            droppedExponent += 1
        }
        var kept = ExactDecimal()
        for byte in digits.utf8 { kept.multiplyAdd(10, UInt32(byte - UInt8(ascii: "0"))) }
        kept.exponent = scaled.exponent + droppedExponent
        kept.isNegative = scaled.isNegative
        return kept.decimal
    }

    // MARK: The magnitude

    /// The magnitude's decimal digits, without leading zeros ("0" for zero).
    private var decimalDigits: String {
        guard !isZero else { return "0" }
        var rest = limbs
        var chunks: [UInt32] = []
        while !rest.isEmpty { chunks.append(Self.divide(&rest, by: 1_000_000_000)) }
        var text = String(chunks.removeLast())
        for chunk in chunks.reversed() {
            let part = String(chunk)
            text += String(repeating: "0", count: 9 - part.count) + part
        }
        return text
    }

    /// Multiplies the magnitude by ten and lowers the exponent by one: the same number.
    private mutating func scaleUp() {
        multiplyAdd(10, 0)
        exponent -= 1
    }

    /// Divides the magnitude by `divisor`, rounding half away from zero (the exponent is the
    /// caller's business).
    private mutating func divideRounding(by divisor: UInt32) {
        let remainder = Self.divide(&limbs, by: divisor)
        if UInt64(remainder) * 2 >= UInt64(divisor) { multiplyAdd(1, 1) }
        if limbs.isEmpty { isNegative = false }
    }

    /// magnitude = magnitude × `factor` + `addend`.
    private mutating func multiplyAdd(_ factor: UInt32, _ addend: UInt32) {
        var carry = UInt64(addend)
        for index in limbs.indices {
            let product = UInt64(limbs[index]) * UInt64(factor) + carry
            limbs[index] = UInt32(truncatingIfNeeded: product)
            carry = product >> 32
        }
        if carry != 0 { limbs.append(UInt32(carry)) }
    }

    /// Divides `limbs` by `divisor` in place; the remainder.
    private static func divide(_ limbs: inout [UInt32], by divisor: UInt32) -> UInt32 {
        var remainder: UInt64 = 0
        for index in limbs.indices.reversed() {
            let current = remainder << 32 | UInt64(limbs[index])
            limbs[index] = UInt32(current / UInt64(divisor))
            remainder = current % UInt64(divisor)
        }
        while limbs.last == 0 { limbs.removeLast() }
        return UInt32(remainder)
    }

    private static func sum(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        var result: [UInt32] = []
        result.reserveCapacity(max(a.count, b.count) + 1)
        var carry: UInt64 = 0
        for index in 0..<max(a.count, b.count) {
            let total = UInt64(index < a.count ? a[index] : 0) + UInt64(index < b.count ? b[index] : 0) + carry
            result.append(UInt32(truncatingIfNeeded: total))
            carry = total >> 32
        }
        if carry != 0 { result.append(UInt32(carry)) }
        return result
    }

    /// `a - b`, where `a >= b`.
    private static func difference(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        var result = a
        var borrow: Int64 = 0
        for index in result.indices {
            var value = Int64(result[index]) - Int64(index < b.count ? b[index] : 0) - borrow
            borrow = value < 0 ? 1 : 0
            if value < 0 { value += 1 << 32 }
            result[index] = UInt32(value)
        }
        while result.last == 0 { result.removeLast() }
        return result
    }

    private static func compare(_ a: [UInt32], _ b: [UInt32]) -> Int {
        if a.count != b.count { return a.count < b.count ? -1 : 1 }
        for index in a.indices.reversed() where a[index] != b[index] { return a[index] < b[index] ? -1 : 1 }
        return 0
    }
}
