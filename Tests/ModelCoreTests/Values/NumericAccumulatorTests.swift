import Foundation
import ModelFixtures
import Testing

@testable import ModelCore

/// Sums and averages of decimals are exact and rounded once, whatever the order of the values,
/// as PostgreSQL's `numeric` sums them (docs/storage-semantics.md): Foundation's `Decimal`
/// holds 38 digits, and adding in it rounds at every value once the sum needs more.
@Suite struct NumericAccumulatorTests {
    private static let posix = Locale(identifier: "en_US_POSIX")
    private static func decimal(_ text: String) -> Decimal { Decimal(string: text, locale: posix)! }
    /// 38 nines: the largest 38-digit integer.
    private static let big = decimal(String(repeating: "9", count: 38))

    private static func sum(_ values: [Decimal]) -> Value {
        var accumulator = NumericAccumulator()
        for value in values { accumulator.add(.decimal(value)) }
        return accumulator.sum(as: .decimal)
    }

    private static func average(_ values: [Decimal]) -> Value {
        var accumulator = NumericAccumulator()
        for value in values { accumulator.add(.decimal(value)) }
        return accumulator.average(as: .decimal)
    }

    @Test func smallValuesLostAgainstALargeOneAreKept() {
        let values = [Self.big, Self.decimal("0.4"), Self.decimal("0.4"), -Self.big]
        #expect(Self.sum(values) == .decimal(Self.decimal("0.8")))
        #expect(Self.average(values) == .decimal(Self.decimal("0.2")))
        #expect(
            Self.sum([Self.big, -Self.big, Self.decimal("0.4"), Self.decimal("0.4")]) == .decimal(Self.decimal("0.8")))
    }

    /// A sum too long for a `Decimal` is cut as Foundation reads a longer number's text (as
    /// PostgreSQL's exact sum is read into one): 2 × B = 199…998 (39 digits) fits in 128 bits.
    @Test func aSumLongerThanADecimalIsCutAsItsTextIsRead() {
        let twice = Self.sum([Self.big, Self.big, Self.decimal("0.3")])
        #expect(twice == .decimal(Self.decimal("199999999999999999999999999999999999998.3")))
        #expect(twice == .decimal(Self.decimal("199999999999999999999999999999999999998")))
    }

    /// Random decimals, each with its negation and a small value, in a random order: the sum is
    /// the small values' sum exactly, every time.
    @Test(arguments: 0..<20)
    func pairsThatCancelLeaveTheRestExactly(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var values: [Decimal] = []
        var small = Decimal.zero
        for _ in 0..<Int.random(in: 1...12, using: &random) {
            let digits = (0..<Int.random(in: 1...38, using: &random)).map { _ in
                String(Int.random(in: 0...9, using: &random))
            }.joined()
            let exponent = Int.random(in: -30...30, using: &random)
            let large = Decimal(
                sign: random.chance(0.5) ? .minus : .plus, exponent: exponent, significand: Self.decimal(digits))
            let little = Decimal(Int.random(in: -999...999, using: &random)) / 100
            small += little
            values += [large, -large, little]
        }
        values.shuffle(using: &random)
        #expect(Self.sum(values) == .decimal(small), "\(values)")
    }

    /// `ExactDecimal` reads every `Decimal` exactly, and its quotient is the exact one cut
    /// toward zero: value − quotient × count has the value's sign and is less than count units of
    /// the quotient's last digit, and the quotient has at most 39 significant digits.
    @Test(arguments: 0..<20)
    func exactDecimalsReadExactlyAndDivideCuttingTowardZero(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<40 {
            let digits = (0..<Int.random(in: 1...38, using: &random)).map { _ in
                String(Int.random(in: 1...9, using: &random))
            }.joined()
            let value = Decimal(
                sign: random.chance(0.5) ? .minus : .plus, exponent: Int.random(in: -60...60, using: &random),
                significand: Self.decimal(digits))
            let exact = ExactDecimal(value)
            #expect(exact.decimal == value, "\(value)")
            let count = Int.random(in: 1...40, using: &random)
            let quotient = try #require(exact.quotient(by: count))
            var rest = exact
            for _ in 0..<count { rest.add(ExactDecimal(quotient).negated) }
            #expect(rest.isZero || rest.isNegative == exact.isNegative, "\(value) / \(count) = \(quotient)")
            // |rest| < count units of the quotient's last digit.
            var margin = ExactDecimal(Decimal(sign: .plus, exponent: quotient.exponent, significand: Decimal(count)))
            margin.add(rest.isNegative ? rest : rest.negated)
            #expect(!margin.isNegative && !margin.isZero, "\(value) / \(count) = \(quotient)")
            let significant = ExactDecimal(quotient).text.filter(\.isNumber).drop { $0 == "0" }
                .reversed().drop { $0 == "0" }
            #expect(significant.count <= 39, "\(quotient)")
        }
    }

    @Test func quotientsKeep39DigitsOr38WhenThirtyNineWouldNotFit() {
        #expect(ExactDecimal(1).quotient(by: 3) == Self.decimal("0." + String(repeating: "3", count: 39)))
        #expect(ExactDecimal(2).quotient(by: 3) == Self.decimal("0." + String(repeating: "6", count: 39)))
        // 39 nines pass 2^128 - 1: 38 are kept.
        let nines = ExactDecimal(Self.decimal(String(repeating: "9", count: 39)))
        #expect(nines.quotient(by: 1) == Self.decimal(String(repeating: "9", count: 38) + "0"))
        #expect(ExactDecimal(Self.decimal("0.8")).quotient(by: 4) == Self.decimal("0.2"))
        #expect(ExactDecimal(Self.decimal("-7")).quotient(by: 2) == Self.decimal("-3.5"))
        #expect(ExactDecimal(0).quotient(by: 5) == 0)
    }

    private static func doubleSum(_ values: [Double]) -> Value {
        var accumulator = NumericAccumulator()
        for value in values { accumulator.add(.double(value)) }
        return accumulator.sum(as: .double)
    }

    /// A running total past the largest double does not decide a double sum: it is the exact
    /// sum rounded once in every order, an infinity among the values is that infinity, and one
    /// of each sign is nil.
    @Test func doubleSumsNearTheLargestDoubleDoNotDependOnTheOrder() {
        let orders: [[Double]] = [[1e308, 1e308, -1e308], [1e308, -1e308, 1e308], [-1e308, 1e308, 1e308]]
        for values in orders {
            #expect(Self.doubleSum(values) == .double(1e308), "\(values)")
            #expect(Self.doubleSum(values + [-.infinity]) == .double(-.infinity), "\(values)")
            #expect(Self.doubleSum([.infinity] + values) == .double(.infinity), "\(values)")
            #expect(Self.doubleSum(values + [.infinity, -.infinity]) == .null, "\(values)")
            var accumulator = NumericAccumulator()
            for value in values { accumulator.add(.double(value)) }
            #expect(accumulator.average(as: .double) == .double(1e308 / 3), "\(values)")
        }
        #expect(Self.doubleSum([1e308, 1e308]) == .double(.infinity))
        #expect(Self.doubleSum([-1e308, -1e308, 1e-300]) == .double(-.infinity))
        #expect(
            Self.doubleSum([.greatestFiniteMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 1])
                == .double(.greatestFiniteMagnitude))
        // Large and small together, exactly: 2^1000 + 1 - 2^1000 is 1.
        #expect(Self.doubleSum([0x1p1000, 1, -0x1p1000]) == .double(1))
        #expect(Self.doubleSum([0x1p1000, 0x1p-1000, -0x1p1000, 0.5]) == .double(0.5))
    }

    @Test func exactDecimalsAddWithCarriesAndBorrows() {
        var total = ExactDecimal(Self.decimal("4294967295"))
        total.add(ExactDecimal(Self.decimal("1")))
        #expect(total.text == "4294967296")
        total.add(ExactDecimal(Self.decimal("-4294967296.001")))
        #expect(total.text == "-0.001")
        total.add(ExactDecimal(Self.decimal("0.001")))
        #expect(total.isZero && total.text == "0")
        var large = ExactDecimal(Decimal(sign: .plus, exponent: 100, significand: 1))
        large.add(ExactDecimal(Decimal(sign: .minus, exponent: -100, significand: 1)))
        #expect(large.text == String(repeating: "9", count: 100) + "." + String(repeating: "9", count: 100))
    }
}
