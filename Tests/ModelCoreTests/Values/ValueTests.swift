import Foundation
import ModelCore
import ModelFixtures
import Testing

/// `Value`: conversion, text forms, Codable, and the one ordering every backend uses.
@Suite struct ValueTests {
    static let decimal = Decimal(string: "-12.345")! // a valid literal
    static let url = URL(string: "https://example.com/a?b=1#c")! // a valid literal

    /// One value of every type, and nil.
    static let samples: [Value] = [
        .null, .string(""), .string("Zé \"q\"\n😀\u{0}"), .int(0), .int(.min), .int(.max), .double(0.1), .double(-0.0),
        .double(1e300), .double(.leastNonzeroMagnitude), .bool(true), .bool(false),
        .date(.iso("2026-01-31T12:00:00.000001Z")),
        .date(Timestamp(microsecondsSince1970: .min)), .data(Data()), .data(Data([0, 255, 1])), .uuid(Fixed.store),
        .url(url),
        .decimal(decimal), .decimal(0), .json("{\"a\": [1, null]}"), .json("null"),
    ]

    @Test(
        arguments: [
            (Value.int(3), AttributeType.double, Value.double(3)),
            (.int(-3), .decimal, .decimal(-3)),
            (.int(1), .bool, .bool(true)),
            (.int(0), .bool, .bool(false)),
            (.int(9_007_199_254_740_992), .double, .double(9_007_199_254_740_992)),
            (.double(4), .int, .int(4)),
            (.double(-0.0), .int, .int(0)),
            // Every whole double an Int64 holds, at both ends (9.2e18 and up were once refused).
            (.double(9.2e18), .int, .int(9_200_000_000_000_000_000)),
            (.double(9_223_372_036_854_774_784), .int, .int(9_223_372_036_854_774_784)),
            (.double(-9_223_372_036_854_775_808), .int, .int(.min)),
            (.double(0.25), .decimal, .decimal(Decimal(string: "0.25")!)), // a valid literal
            (.string("42"), .int, .int(42)),
            (.string("-1.5"), .double, .double(-1.5)),
            (.string("YES"), .bool, .bool(true)),
            (.string("0"), .bool, .bool(false)),
            (.string("2026-01-31"), .date, .date(.iso("2026-01-31T00:00:00Z"))),
            (.string("AP8B"), .data, .data(Data([0, 255, 1]))),
            (.string("11111111-2222-3333-4444-555555555555"), .uuid, .uuid(Fixed.store)),
            (.string("https://example.com/a?b=1#c"), .url, .url(url)),
            (.string("-12.345"), .decimal, .decimal(decimal)),
            (.string("1E3"), .decimal, .decimal(1000)),
            (.string("[1, 2]"), .json, .json("[1, 2]")),
            (.string("x"), .string, .string("x")),
            (.null, .date, .null),
            (.date(.iso("2026-01-31")), .date, .date(.iso("2026-01-31"))),
        ] as [(Value, AttributeType, Value)])
    func converts(value: Value, type: AttributeType, expected: Value) throws {
        #expect(try value.converted(to: type) == expected)
    }

    /// A conversion that gives its value back is no change; another type, or a zero's sign
    /// dropped, is.
    @Test func conversionsSayWhetherTheyChangedTheirValue() throws {
        for value in [Value.string("a"), .double(1.5), .double(0), .int(-3), .null, .date(.iso("2026-01-31"))] {
            #expect(!(try value.converted(to: value.type ?? .string)).isChanged(from: value), "\(value)")
        }
        #expect(try Value.int(3).converted(to: .double).isChanged(from: .int(3)))
        #expect(try Value.double(-0.0).converted(to: .double).isChanged(from: .double(-0.0)))
        #expect(try Value.string("2026-01-31").converted(to: .date).isChanged(from: .string("2026-01-31")))
    }

    /// Negative zero comes in as zero (`==` cannot tell them apart, so the sign is checked).
    @Test(arguments: [(AttributeType.double, Value.double(0)), (.int, .int(0)), (.decimal, .decimal(0))])
    func negativeZeroBecomesZero(type: AttributeType, expected: Value) throws {
        let converted = try Value.double(-0.0).converted(to: type)
        #expect(converted == expected)
        if case .double(let d) = converted { #expect(d.sign == .plus) }
    }

    @Test(
        arguments: [
            (Value.double(.nan), AttributeType.double),
            (Value.double(4.5), AttributeType.int),
            (.double(1e19), .int),
            (.double(.nan), .int),
            (.double(.infinity), .decimal),
            (.int(9_007_199_254_740_993), .double),
            (.int(.max), .double),
            (.int(2), .bool),
            (.bool(true), .int),
            (.int(1), .string),
            (.date(.iso("2026-01-31")), .string),
            (.string("1.2.3"), .decimal),
            (.string("1e2e3"), .decimal),
            (.string("12,5"), .decimal),
            (.string("."), .decimal),
            (.string("1e"), .decimal),
            (.string(""), .int),
            (.string(" 1"), .int),
            (.string("9223372036854775808"), .int),
            (.double(9_223_372_036_854_775_808), .int), // 2^63, one past the largest
            (.double(1.5), .int),
            (.double(.infinity), .int),
            (.string(""), .double),
            (.string("NaN"), .double),
            (.string("1e400"), .double),
            (.string("-1e999"), .double),
            (.string("-nan"), .double),
            (.string("NaN"), .decimal),
            // More significant digits than a decimal keeps: once cut, not refused.
            (.string("1.00000000000000000000000000000000000000001"), .decimal),
            (.string("99999999999999999999999999999999999999999"), .decimal),
            (.string("maybe"), .bool),
            (.string("2026-02-30"), .date),
            (.string("not base64!"), .data),
            (.string("1111-2222"), .uuid),
            (.string("no scheme"), .url),
            (.string("{"), .json),
            (.uuid(Fixed.store), .url),
        ] as [(Value, AttributeType)])
    func refusesLossyConversions(value: Value, type: AttributeType) throws {
        let error = try #require(throws: ModelError.self) { try value.converted(to: type) }
        #expect(error.code == .typeMismatch)
        #expect(error.context["expected"] == type.rawValue)
        #expect(error.message.contains("expected a value of type \(type.rawValue)"))
    }

    /// Infinity is written "inf" (what a double's text form is); a number too large to be a
    /// double is not made infinite, and NaN is no value.
    @Test func infinityIsWrittenAndOverflowIsNot() {
        #expect(Value(parsing: "inf", as: .double) == .double(.infinity))
        #expect(Value(parsing: "-Infinity", as: .double) == .double(-.infinity))
        #expect(Value(parsing: "1e308", as: .double) == .double(1e308))
        #expect(Value(parsing: "1e400", as: .double) == nil)
        #expect(Value(parsing: "nan", as: .double) == nil)
    }

    /// Up to 38 significant digits are kept exactly; zeros before the first and after the last
    /// other digit are not significant.
    @Test(arguments: [
        "12345678901234567890123456789012345678", "1.234567890123456789012345678901234567",
        "1" + String(repeating: "0", count: 45), "0." + String(repeating: "0", count: 30) + "1",
        "-1" + String(repeating: "0", count: 36) + "1",
    ])
    func decimalsOfUpTo38SignificantDigitsAreKept(text: String) throws {
        let value = try Value.string(text).converted(to: .decimal)
        guard case .decimal(let decimal) = value else { throw ModelError(.typeMismatch, "\(value)") }
        #expect(decimal == Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")))
        #expect(Value(parsing: value.textForm ?? "", as: .decimal) == value)
    }

    /// The text form reads back to the same value, for every type.
    @Test(arguments: samples)
    func textFormRoundTrips(value: Value) throws {
        guard let type = value.type, let text = value.textForm else {
            #expect(value == .null && value.textForm == nil)
            return
        }
        #expect(Value(parsing: text, as: type) == value, "\(type): \(text)")
    }

    @Test(arguments: samples)
    func codableRoundTrips(value: Value) throws {
        let data = try JSONEncoder().encode([value])
        let decoded = try JSONDecoder().decode([Value].self, from: data)
        #expect(decoded == [value], "\(String(decoding: data, as: UTF8.self))")
    }

    @Test func codableShape() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func json(_ value: Value) throws -> String { String(decoding: try encoder.encode([value]), as: UTF8.self) }
        #expect(try json(.null) == "[null]")
        #expect(try json(.int(42)) == "[{\"int\":42}]")
        #expect(try json(.string("Paris")) == "[{\"string\":\"Paris\"}]")
        #expect(try json(.bool(false)) == "[{\"bool\":false}]")
        #expect(try json(.date(.iso("2026-01-02T03:04:05.000006Z"))) == "[{\"date\":\"2026-01-02T03:04:05.000006Z\"}]")
        #expect(try json(.decimal(Decimal(string: "12.50")!)) == "[{\"decimal\":\"12.5\"}]") // a valid literal
        #expect(try json(.data(Data([0, 255]))) == "[{\"data\":\"AP8=\"}]")
        #expect(try json(.uuid(Fixed.store)) == "[{\"uuid\":\"11111111-2222-3333-4444-555555555555\"}]")
        for bad in [
            "[{\"int\": 1, \"string\": \"x\"}]", "[{\"float\": 1}]", "[{}]", "[{\"date\": \"soon\"}]",
            "[{\"int\": \"1\"}]",
            "[{\"uuid\": \"x\"}]", "[5]", "[{\"int\": 9223372036854775808}]",
        ] {
            #expect(throws: DecodingError.self, "\(bad)") {
                try JSONDecoder().decode([Value].self, from: Data(bad.utf8))
            }
        }
    }

    // MARK: Ordering

    @Test func nilSortsFirst() {
        for value in Self.samples where value != .null {
            #expect(Value.compare(.null, value) == .orderedAscending, "\(value)")
            #expect(Value.compare(value, .null) == .orderedDescending, "\(value)")
        }
        #expect(Value.compare(.null, .null) == .orderedSame)
    }

    @Test(
        arguments: [
            (Value.int(1), Value.double(1.0), ComparisonResult.orderedSame),
            (.int(9_007_199_254_740_993), .double(9_007_199_254_740_992), .orderedDescending),
            (.int(9_007_199_254_740_991), .double(9_007_199_254_740_992), .orderedAscending),
            (.int(.max), .double(0x1p63), .orderedAscending),
            (.int(.min), .double(-9_223_372_036_854_775_808), .orderedSame),
            (.int(.min), .double(-9.3e18), .orderedDescending),
            (.int(-1), .double(-0.5), .orderedAscending),
            (.int(0), .double(-0.0), .orderedSame),
            (.int(2), .double(1.9999999999999998), .orderedDescending),
            (.int(-2), .double(-2.0000000000000004), .orderedDescending),
            (.int(5), .double(.infinity), .orderedAscending),
            (.int(5), .double(-.infinity), .orderedDescending),
            (.double(0.1), .int(0), .orderedDescending),
            (.decimal(Decimal(string: "0.1")!), .int(0), .orderedDescending), // a valid literal
            (.int(3), .decimal(3), .orderedSame),
            (.decimal(Decimal(string: "2.5")!), .double(2.5), .orderedSame), // a valid literal
            (.decimal(9_007_199_254_740_993), .double(9_007_199_254_740_992), .orderedDescending),
            // a valid literal; 0.1 is as near as doubles get
            (.decimal(Decimal(string: "0.1")!), .double(0.1), .orderedSame),
            (.decimal(Decimal(string: "2.2500000000000000001")!), .double(2.25), .orderedDescending), // a valid literal
            (.decimal(1), .double(.infinity), .orderedAscending),
            (.string("Z"), .string("a"), .orderedAscending),
            (.string("a"), .string("é"), .orderedAscending),
            (.string("Z"), .string("é"), .orderedAscending),
            (.string("e\u{301}"), .string("é"), .orderedAscending), // bytes, not canonical equivalence
            (.string("a"), .string("ab"), .orderedAscending),
            (.string(""), .string("\u{0}"), .orderedAscending),
            (.string("\u{FFFF}"), .string("😀"), .orderedAscending), // UTF-8 order, not UTF-16
            (.bool(false), .bool(true), .orderedAscending),
            (.date(.iso("1969-12-31T23:59:59.999999Z")), .date(.iso("1970-01-01")), .orderedAscending),
            (.data(Data([1, 2])), .data(Data([1, 2, 0])), .orderedAscending),
            (.data(Data([2])), .data(Data([1, 255])), .orderedDescending),
            (
                .uuid(UUID(uuidString: "AAAAAAAA-0000-0000-0000-000000000000")!),
                .uuid(UUID(uuidString: "bbbbbbbb-0000-0000-0000-000000000000")!), // valid literals
                .orderedAscending
            ),
            (.url(URL(string: "https://b")!), .url(URL(string: "https://a/z")!), .orderedDescending), // valid literals
            (.json("[1]"), .json("{}"), .orderedAscending),
        ] as [(Value, Value, ComparisonResult)])
    func compares(a: Value, b: Value, expected: ComparisonResult) {
        #expect(Value.compare(a, b) == expected)
        #expect(Value.compare(b, a) == expected.reversed)
        #expect(Value.equalForPredicate(a, b) == (expected == .orderedSame))
    }

    @Test func unrelatedKindsHaveNoOrder() {
        #expect(Value.compare(.string("1"), .int(1)) == nil)
        #expect(Value.compare(.bool(true), .int(1)) == nil)
        #expect(Value.compare(.date(.iso("2026-01-01")), .int(0)) == nil)
        #expect(Value.compare(.json("\"a\""), .string("a")) == nil)
        #expect(!Value.equalForPredicate(.string("1"), .int(1)))
    }

    static let extremeInts: [Int64] = [
        .max, .min, .max - 1, .min + 1, 9_007_199_254_740_992, 9_007_199_254_740_993, -9_007_199_254_740_993,
    ]
    static let extremeDoubles: [Double] = [0x1p63, -0x1p63, 0x1p53, -0x1p53, 0x1p62 + 0x1p10]

    /// Random ints, doubles and decimals compare as exact arithmetic says. The oracle scales every
    /// value by 2^40 into an Int128, which is exact for all the values generated here.
    @Test func numericOrderMatchesExactArithmetic() throws {
        func exact(_ value: Value) -> Int128? {
            switch value {
            case .int(let i): return Int128(i) << 40
            case .double(let d): return Int128(exactly: d * 0x1p40)
            case .decimal(let d):
                var scaled = d * Decimal(sign: .plus, exponent: 0, significand: Decimal(1 << 40))
                var rounded = Decimal()
                NSDecimalRound(&rounded, &scaled, 0, .plain)
                return rounded == scaled ? Int128(rounded.canonicalText) : nil
            default: return nil
            }
        }
        var random = SeededRandom(seed: 0x0DE2)
        var values: [Value] = []
        for _ in 0..<2_000 {
            let base = Int64.random(in: -1_000_000...1_000_000, using: &random)
            switch random.int(0...5) {
            case 0: values.append(.int(base))
            case 5: values.append(.decimal(Decimal(random.pick(Self.extremeInts))))
            case 1: values.append(.double(Double(base) + random.pick([0, 0.5, -0.25, 1e-9, -1e-9])))
            case 2:
                values.append(
                    .decimal(
                        // valid literals
                        Decimal(base) + random.pick([Decimal(0), Decimal(string: "0.5")!, Decimal(string: "-0.25")!])))
            case 3: values.append(.int(random.pick(Self.extremeInts)))
            default: values.append(.double(random.pick(Self.extremeDoubles)))
            }
        }
        var checked = 0, wrong: [String] = []
        for _ in 0..<20_000 {
            let a = random.pick(values), b = random.pick(values)
            guard let x = exact(a), let y = exact(b) else { continue }
            checked += 1
            let expected: ComparisonResult = x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
            if Value.compare(a, b) != expected { wrong.append("\(a) vs \(b)") }
        }
        #expect(checked > 18_000)
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }
}
