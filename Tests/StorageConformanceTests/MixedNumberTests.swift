import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Numbers of different types compared, computed and averaged as `Value.compare` and
/// docs/storage-semantics.md say, on every backend: a decimal against an int or a double keeps
/// the nil rules, an int against a double compares exactly, a NaN of arithmetic is nil, and an
/// average too small for a double is zero.
@Suite struct MixedNumberTests {
    @Test(arguments: BackendKind.allCases)
    func aDecimalAgainstAnotherNumberKeepsTheNilRules(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            c.insert("Item", ["title": .string("none")])
            c.insert("Item", ["title": .string("amount"), "amount": .decimal(1)])
            c.insert("Item", ["title": .string("count"), "count": .int(1)])
            c.insert("Item", ["title": .string("all"), "amount": .decimal(2), "count": .int(2), "price": .double(2)])
            try await store.save(c)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("amount == count", ["none", "all"]),
                    ("amount != count", ["amount", "count"]),
                    ("NOT (amount != count)", ["none", "all"]),
                    ("NOT (amount == count)", ["amount", "count"]),
                    ("amount == price", ["none", "count", "all"]),
                    ("price != amount", ["amount"]),
                    ("amount <= count", ["all"]),
                    ("NOT (amount < count)", ["none", "amount", "count", "all"]),
                    ("amount IN {nil, 2}", ["none", "count", "all"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func anIntAgainstADoubleComparesExactly(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            // 2^53 + 1 rounds to 2^53 as a double, and 2^63 - 1 to 2^63.
            c.insert("Item", ["title": .string("a"), "count": .int(9_007_199_254_740_993), "price": .double(0x1p53)])
            c.insert("Item", ["title": .string("b"), "count": .int(.max), "price": .double(0x1p63)])
            c.insert("Item", ["title": .string("c"), "count": .int(3), "price": .double(3)])
            c.insert("Item", ["title": .string("d"), "count": .int(-4), "price": .double(-3.5)])
            c.insert("Item", ["title": .string("nil")])
            try await store.save(c)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("count == price", ["c", "nil"]),
                    ("count != price", ["a", "b", "d"]),
                    ("price >= count", ["b", "c", "d"]),
                    ("count < price", ["b", "d"]),
                    ("count > price", ["a"]),
                    ("price < count", ["a"]),
                    ("count BETWEEN {0, price}", ["b", "c"]),
                    ("count == 9.223372036854775808e18", []),
                    ("count < 9.223372036854775808e18", ["a", "b", "c", "d"]),
                    ("count IN {9.223372036854775808e18, 3.5}", []),
                    ("count IN {9.007199254740992e15, 3}", ["c"]),
                    ("price == 9007199254740993", []),
                    ("price < 9007199254740993", ["a", "c", "d"]),
                    ("price > 9223372036854775807", ["b"]),
                    ("price IN {9223372036854775807, 3}", ["c"]),
                    ("NOT (count == price)", ["a", "b", "d"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func aNaNOfArithmeticIsNil(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            c.insert("Item", ["title": .string("high"), "price": .double(.infinity)])
            c.insert("Item", ["title": .string("low"), "price": .double(-.infinity)])
            c.insert("Item", ["title": .string("one"), "price": .double(1)])
            try await store.save(c)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("(price - price) == nil", ["high", "low"]),
                    ("(price - price) != nil", ["one"]),
                    ("(price * 0) == nil", ["high", "low"]),
                    ("(price / price) == nil", ["high", "low"]),
                    ("(price * 0) <= -1", []),
                    ("NOT ((price + 1) - price >= 1)", ["high", "low"]),
                ])
        }
    }

    /// Decimals are summed exactly and rounded once (as PostgreSQL's `numeric` sums), not in a
    /// 38-digit `Decimal` that loses each 0.4 against 38 nines; an average keeps 39 digits, or 38
    /// when 39 would not fit in 128 bits.
    @Test(arguments: BackendKind.allCases)
    func decimalSumsAndAveragesAreExactWhateverTheOrder(_ kind: BackendKind) async throws {
        func decimal(_ text: String) -> Decimal { Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))! }
        let nines = decimal(String(repeating: "9", count: 38))
        try await withStore(kind, Catalog.schema) { store in
            let rows = try await Self.sumsAndAverages(
                of: "amount", in: store,
                [
                    ("x", [nines, decimal("0.4"), decimal("0.4"), -nines].map { .decimal($0) }),
                    ("y", [nines, nines, decimal("0.3")].map { .decimal($0) }),
                ])
            #expect(
                rows == [
                    ["label": .string("x"), "sum": .decimal(decimal("0.8")), "avg": .decimal(decimal("0.2"))],
                    [
                        // 199…998.3 read into a Decimal keeps its 39 integer digits.
                        "label": .string("y"), "sum": .decimal(decimal("199999999999999999999999999999999999998")),
                        "avg": .decimal(decimal(String(repeating: "6", count: 38))),
                    ],
                ], "\(rows)")
        }
    }

    /// A double sum whose running total would pass the largest double is still the exact sum
    /// rounded once, in whatever order the rows are visited; an infinity among the values is
    /// that infinity.
    @Test(arguments: BackendKind.allCases)
    func doubleSumsNearTheLargestDoubleAreExact(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let groups: [(String, [Double])] = [
                ("a", [1e308, 1e308, -1e308]), ("b", [-1e308, 1e308, 1e308]),
                ("c", [1e308, 1e308, -1e308, -.infinity]),
                ("d", [1e308, 1e308]), ("e", [0x1p1000, 1, -0x1p1000]),
            ]
            let rows = try await Self.sumsAndAverages(
                of: "price", in: store, groups.map { label, prices in (label, prices.map { .double($0) }) })
            let expected: [(String, Double, Double)] = [
                ("a", 1e308, 1e308 / 3), ("b", 1e308, 1e308 / 3), ("c", -.infinity, -.infinity),
                ("d", .infinity, .infinity), ("e", 1, 1.0 / 3),
            ]
            let rowsExpected: [[String: Value]] = expected.map { label, sum, average in
                ["label": .string(label), "sum": .double(sum), "avg": .double(average)]
            }
            #expect(rows == rowsExpected, "\(rows)")
        }
    }

    /// Saves an Item labelled with each group's name for each of its `attribute` values, in
    /// order, and returns the sum and average of `attribute` per label.
    private static func sumsAndAverages(
        of attribute: String, in store: TestStore, _ groups: [(label: String, values: [Value])]
    ) async throws -> [[String: Value]] {
        var c = store.changes()
        for (label, values) in groups {
            for (index, value) in values.enumerated() {
                c.insert("Item", ["title": .string("\(label)\(index)"), "label": .string(label), attribute: value])
            }
        }
        try await store.save(c)
        return try await store.backend.aggregate(
            AggregateDescriptor(
                entityName: "Item", groupBy: ["label"],
                aggregations: [
                    Aggregation("sum", .sum, PropertyPath([attribute])),
                    Aggregation("avg", .avg, PropertyPath([attribute])),
                ]))
    }

    @Test(arguments: BackendKind.allCases)
    func anAverageTooSmallForADoubleIsZero(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let tiny = c.insert("Item", ["title": .string("tiny"), "label": .string("x"), "price": .double(5e-324)])
            let zero = c.insert("Item", ["title": .string("zero"), "label": .string("x"), "price": .double(0)])
            let other = c.insert("Item", ["title": .string("other"), "label": .string("x"), "price": .double(0)])
            let shelf = c.insert("Shelf", ["name": .string("tiny")])
            for item in [tiny, zero, other] { c.link(shelf, "items", item) }
            try await store.save(c)
            let rows = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Item", groupBy: ["label"],
                    aggregations: [Aggregation("avg", .avg, "price"), Aggregation("sum", .sum, "price")]))
            #expect(rows == [["label": .string("x"), "avg": .double(0), "sum": .double(5e-324)]], "\(rows)")
            try await expectMatches(
                store, "Shelf", key: "name", [("items.@avg.price == 0", ["tiny"]), ("items.@avg.price > 0", [])])
        }
    }
}
