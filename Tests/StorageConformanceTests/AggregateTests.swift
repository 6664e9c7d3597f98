import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Grouped aggregates: counts checked against counting in Swift, every function, nil groups,
/// group keys through to-one relationships, sorting and paging of rows, empty stores.
@Suite struct AggregateTests {
    /// 60 students born between 1990 and 1999 (reproducibly random), some without a year.
    static func students(_ store: TestStore) async throws -> [Int64?] {
        var generator = SeededRandom(seed: 42)
        var years: [Int64?] = []
        var c = store.changes()
        for index in 0..<60 {
            let year: Int64? = generator.next() % 7 == 0 ? nil : 1990 + Int64(generator.next() % 10)
            years.append(year)
            c.insert("Student", ["name": .string("student \(index)"), "birthOfYear": year.map(Value.int) ?? .null])
        }
        try await store.save(c)
        return years
    }

    @Test(arguments: BackendKind.allCases)
    func groupedCountMatchesCountingInSwift(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            let years = try await Self.students(store)
            let rows = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Student", groupBy: ["birthOfYear"], aggregations: [Aggregation("count", .count)]))
            var expected: [Int64?: Int64] = [:]
            for year in years { expected[year, default: 0] += 1 }
            let ordered = expected.keys.sorted { ($0 ?? .min) < ($1 ?? .min) }
            #expect(
                rows == ordered.map { ["birthOfYear": $0.map(Value.int) ?? .null, "count": .int(expected[$0] ?? 0)] })

            // Sorted by the count, descending; ties by the group key, ascending; then paged.
            let byCount = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Student", groupBy: ["birthOfYear"], aggregations: [Aggregation("count", .count)],
                    sortBy: [AggregateSort("count", ascending: false)], offset: 1, limit: 3))
            let expectedOrder = ordered.enumerated().sorted { a, b in
                let (x, y) = (expected[a.element] ?? 0, expected[b.element] ?? 0)
                return x != y ? x > y : a.offset < b.offset
            }.map(\.element)
            #expect(
                byCount.map { $0["birthOfYear"] }
                    == expectedOrder.dropFirst().prefix(3).map { $0.map(Value.int) ?? .null })

            let filtered = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Student", predicate: try PredicateParser.parse("birthOfYear >= 1995"),
                    aggregations: [
                        Aggregation("n", .count), Aggregation("years", .count, "birthOfYear"),
                        Aggregation("first", .min, "birthOfYear"), Aggregation("last", .max, "birthOfYear"),
                    ]))
            let late = years.compactMap { $0 }.filter { $0 >= 1995 }
            #expect(
                filtered == [
                    [
                        "n": .int(Int64(late.count)), "years": .int(Int64(late.count)),
                        "first": late.min().map(Value.int) ?? .null, "last": late.max().map(Value.int) ?? .null,
                    ]
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func everyFunctionWithAndWithoutGroups(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            let all = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Item",
                    aggregations: [
                        Aggregation("n", .count), Aggregation("priced", .count, "price"),
                        Aggregation("total", .sum, "count"), Aggregation("mean", .avg, "count"),
                        Aggregation("priceSum", .sum, "price"), Aggregation("priceAvg", .avg, "price"),
                        Aggregation("amountSum", .sum, "amount"), Aggregation("amountAvg", .avg, "amount"),
                        Aggregation("low", .min, "price"), Aggregation("high", .max, "count"),
                        Aggregation("firstTitle", .min, "title"), Aggregation("lastAdded", .max, "added"),
                    ]))
            #expect(
                all == [
                    [
                        "n": .int(6), "priced": .int(5),
                        "total": .int(114), "mean": .double(22.8),
                        "priceSum": .double(116.375), "priceAvg": .double(23.275),
                        "amountSum": .decimal(Decimal(string: "20.6")!),
                        "amountAvg": .decimal(Decimal(string: "20.6")! / 3), // literal
                        "low": .double(0.25), "high": .int(100),
                        "firstTitle": .string("Apple"), "lastAdded": date("2027-06-15T12:00:00.5Z"),
                    ]
                ])

            let byLabel = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Item", groupBy: ["label"],
                    aggregations: [
                        Aggregation("n", .count), Aggregation("sum", .sum, "price"), Aggregation("avg", .avg, "count"),
                    ]))
            #expect(
                byLabel == [
                    ["label": .null, "n": .int(1), "sum": .double(0.25), "avg": .null],
                    ["label": .string("Fruit"), "n": .int(1), "sum": .null, "avg": .double(0)],
                    ["label": .string("dessert"), "n": .int(2), "sum": .double(14.5), "avg": .double(4.5)],
                    ["label": .string("fruit"), "n": .int(1), "sum": .double(1.5), "avg": .double(5)],
                    ["label": .string("toy"), "n": .int(1), "sum": .double(100.125), "avg": .double(100)],
                ])

            let twoKeys = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Item", groupBy: ["rank", "inStock"], aggregations: [Aggregation("n", .count)],
                    sortBy: [AggregateSort("rank", ascending: false)]))
            #expect(
                twoKeys == [
                    ["rank": .int(3), "inStock": .bool(false), "n": .int(1)],
                    ["rank": .int(3), "inStock": .bool(true), "n": .int(1)],
                    ["rank": .int(2), "inStock": .bool(false), "n": .int(1)],
                    ["rank": .int(1), "inStock": .null, "n": .int(1)],
                    ["rank": .int(1), "inStock": .bool(true), "n": .int(1)],
                    ["rank": .int(0), "inStock": .null, "n": .int(1)],
                ])
            let groupsOnly = try await store.backend.aggregate(
                AggregateDescriptor(entityName: "Item", groupBy: ["rank"], aggregations: []))
            #expect(groupsOnly == [["rank": .int(0)], ["rank": .int(1)], ["rank": .int(2)], ["rank": .int(3)]])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func groupKeysThroughToOneRelationships(_ kind: BackendKind) async throws {
        try await withStore(kind, Articles.schema) { store in
            _ = try await Datasets.articles(store)
            let rows = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Article", groupBy: ["category.name", "collection.name"],
                    aggregations: [Aggregation("n", .count)]))
            #expect(
                rows == [
                    ["category.name": .null, "collection.name": .null, "n": .int(1)],
                    ["category.name": .string("food"), "collection.name": .string("Food"), "n": .int(1)],
                    ["category.name": .string("food"), "collection.name": .string("Mixed"), "n": .int(1)],
                    ["category.name": .string("tech"), "collection.name": .string("Mixed"), "n": .int(2)],
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func inheritanceAndEmptyResults(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            let functions = [
                Aggregation("n", .count), Aggregation("sum", .sum, "perdiem"), Aggregation("avg", .avg, "perdiem"),
                Aggregation("min", .min, "startDate"), Aggregation("max", .max, "name"),
            ]
            let empty: AggregateRow = ["n": .int(0), "sum": .null, "avg": .null, "min": .null, "max": .null]
            #expect(
                try await store.backend.aggregate(
                    AggregateDescriptor(entityName: "BusinessTrip", aggregations: functions)) == [empty])
            #expect(
                try await store.backend.aggregate(
                    AggregateDescriptor(
                        entityName: "Trip", groupBy: ["name"],
                        aggregations: [Aggregation("n", .count)])
                ).isEmpty)
            try await Datasets.trips(store)
            #expect(
                try await store.backend.aggregate(
                    AggregateDescriptor(
                        entityName: "Trip", aggregations: [Aggregation("n", .count)], includesSubentities: false)) == [
                        ["n": .int(1)]
                    ])
            #expect(
                try await store.backend.aggregate(
                    AggregateDescriptor(
                        entityName: "Trip", predicate: try PredicateParser.parse("@entity == \"PersonalTrip\""),
                        aggregations: [Aggregation("n", .count), Aggregation("first", .min, "startDate")]))
                    == [["n": .int(2), "first": date("2026-03-01")]])
            #expect(
                try await store.backend.aggregate(
                    AggregateDescriptor(entityName: "BusinessTrip", aggregations: functions))
                    == [
                        [
                            "n": .int(1), "sum": .double(80), "avg": .double(80), "min": date("2026-02-01"),
                            "max": .string("Berlin"),
                        ]
                    ])
            #expect(
                try await store.backend.aggregate(
                    AggregateDescriptor(
                        entityName: "Trip", predicate: .constant(false), aggregations: [Aggregation("n", .count)])) == [
                        ["n": .int(0)]
                    ])
        }
    }

    /// A sum or average of doubles that is NaN (an infinity of each sign) is nil, as SQLite's NaN
    /// is NULL: in predicates (where `@sum` of nil is 0, as of nothing), in grouped aggregates
    /// and in their sorts, on every backend. PostgreSQL's NaN equals itself and sorts above every
    /// number; the memory backend's is a double that compares with nothing.
    @Test(arguments: BackendKind.allCases)
    func aNaNSumOrAverageIsNil(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let high = c.insert("Item", ["title": .string("high"), "label": .string("x"), "price": .double(.infinity)])
            let low = c.insert("Item", ["title": .string("low"), "label": .string("x"), "price": .double(-.infinity)])
            let one = c.insert("Item", ["title": .string("one"), "label": .string("y"), "price": .double(1)])
            let mixed = c.insert("Shelf", ["name": .string("mixed")])
            let plain = c.insert("Shelf", ["name": .string("plain")])
            c.insert("Shelf", ["name": .string("empty")])
            c.link(mixed, "items", high)
            c.link(mixed, "items", low)
            c.link(plain, "items", one)
            try await store.save(c)
            try await expectMatches(
                store, "Shelf", key: "name",
                [
                    ("items.@sum.price > 0", ["plain"]),
                    ("items.@sum.price == 0", ["mixed", "empty"]),
                    ("NOT (items.@sum.price > 0)", ["mixed", "empty"]),
                    ("items.@sum.price > 1e308", []),
                    ("items.@avg.price == nil", ["mixed", "empty"]),
                    ("items.@avg.price != nil", ["plain"]),
                    ("items.@avg.price > 0", ["plain"]),
                    ("items.@avg.price >= items.@avg.price", ["plain"]),
                ])
            let byLabel = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Item", groupBy: ["label"],
                    aggregations: [Aggregation("sum", .sum, "price"), Aggregation("avg", .avg, "price")],
                    sortBy: [AggregateSort("sum", ascending: false)]))
            #expect(
                byLabel == [
                    ["label": .string("y"), "sum": .double(1), "avg": .double(1)],
                    ["label": .string("x"), "sum": .null, "avg": .null],
                ], "\(byLabel)")
            let all = try await store.backend.aggregate(
                AggregateDescriptor(
                    entityName: "Item",
                    aggregations: [Aggregation("sum", .sum, "price"), Aggregation("avg", .avg, "price")]))
            #expect(all == [["sum": .null, "avg": .null]], "\(all)")
        }
    }
}
