import Foundation
@testable import MemoryStorage
import ModelCore
import Testing

/// The arithmetic of predicates, value by value.
@Suite struct ValueArithmeticTests {
    static let cases: [(ArithmeticOperator, Value, Value, Value)] = [
        (.add, .int(2), .int(3), .int(5)),
        (.subtract, .int(2), .int(3), .int(-1)),
        (.multiply, .int(4), .int(-3), .int(-12)),
        (.divide, .int(7), .int(2), .double(3.5)),
        (.divide, .int(6), .int(3), .double(2)),
        (.divide, .int(1), .int(0), .null),
        (.divide, .double(1), .double(0), .null),
        (.add, .int(.max), .int(1), .double(Double(Int64.max) + 1)),
        (.multiply, .int(.min), .int(-1), .double(-Double(Int64.min))),
        (.subtract, .int(.min), .int(1), .double(Double(Int64.min) - 1)),
        (.add, .int(1), .double(0.5), .double(1.5)),
        (.multiply, .double(0.5), .int(3), .double(1.5)),
        (.add, .null, .int(1), .null),
        (.multiply, .int(1), .null, .null),
        (
            .add, .date(Timestamp(microsecondsSince1970: 10)), .double(0.0000015),
            .date(Timestamp(microsecondsSince1970: 12))
        ),
        (
            .subtract, .date(Timestamp(microsecondsSince1970: -10)), .double(0.0000015),
            .date(Timestamp(microsecondsSince1970: -12))
        ),
        (.add, .date(Timestamp(microsecondsSince1970: 0)), .int(2), .date(Timestamp(microsecondsSince1970: 2_000_000))),
        (.add, .int(2), .date(Timestamp(microsecondsSince1970: 1)), .date(Timestamp(microsecondsSince1970: 2_000_001))),
        (
            .subtract, .date(Timestamp(microsecondsSince1970: 3_500_000)),
            .date(Timestamp(microsecondsSince1970: 1_000_000)), .double(2.5)
        ),
        (.add, .date(Timestamp(microsecondsSince1970: 0)), .double(.infinity), .null),
        (.multiply, .date(Timestamp(microsecondsSince1970: 0)), .int(2), .null),
    ]

    @Test func everyCase() {
        for (op, a, b, expected) in Self.cases {
            #expect(ValueArithmetic.apply(op, a, b) == expected, "\(a.debugText) \(op.rawValue) \(b.debugText)")
        }
    }

    /// Unique keys meet when `Value.compare` says the values are equal, and only then.
    @Test func uniqueKeysFollowValueCompare() {
        #expect(UniqueKey([.string("é")]) != UniqueKey([.string("e\u{301}")]))
        #expect(UniqueKey([.string("a"), .int(1)]) == UniqueKey([.string("a"), .int(1)]))
        // literals
        #expect(UniqueKey([.decimal(Decimal(string: "1.50")!)]) == UniqueKey([.decimal(Decimal(string: "1.5")!)]))
        #expect(UniqueKey([.double(0)]) == UniqueKey([.double(-0.0)]))
        #expect(UniqueKey([.string("a"), .null]) == nil)
        #expect(UniqueKey.sameValues([.double(1)], [.int(1)]))
        #expect(!UniqueKey.sameValues([.string("A")], [.string("a")]))
    }
}
