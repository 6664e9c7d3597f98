import Foundation
import ModelCore
import ModelFixtures
import SQLiteStorage
import Testing

/// Long IN lists (past SQLite's parameter limit), decimals compared and summed by value.
@Suite struct ValueTests {
    @Test func longListsOfEveryKindMatch() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.insert(
                "Item",
                [
                    [
                        "title": .string("O'Brien \"quoted\" é"), "count": .int(7), "price": .double(0.1 + 0.2),
                        "blob": .data(Data([0, 255])),
                        "added": date("2026-05-05T05:05:05.000005Z"), "amount": .decimal(Decimal(string: "10.25")!),
                    ],
                    ["title": .string("other"), "count": .int(-1), "price": .double(0.3), "blob": .data(Data())],
                ])
            let many = 40_000
            let counts = (0..<many).map { String($0 * 7) }.joined(separator: ", ")
            #expect(try await store.values("Item", "count IN {\(counts)}", key: "title") == ["O'Brien \"quoted\" é"])
            let titles = (0..<100).map { "\"t\($0)\"" }.joined(separator: ", ") + ", \"O'Brien \\\"quoted\\\" é\""
            #expect(try await store.values("Item", "title IN {\(titles)}", key: "count") == ["7"])
            #expect(try await store.values("Item", "title IN[c] {\(titles.uppercased())}", key: "count") == ["7"])
            let prices = (1...100).map { "\(Double($0) / 10)" }.joined(separator: ", ")
            // 0.1 + 0.2 is not 0.3: the double travels exactly.
            #expect(try await store.values("Item", "price IN {\(prices)}", key: "title") == ["other"])
            let amounts = (0..<100).map { "\"\($0).250\"" }.joined(separator: ", ")
            #expect(try await store.values("Item", "amount IN {\(amounts)}", key: "title") == ["O'Brien \"quoted\" é"])
            let dates = (0..<100).map { "\"2026-05-05T05:05:\(String($0 % 60).leftPadded(2)).000005Z\"" }.joined(
                separator: ", ")
            #expect(try await store.values("Item", "added IN {\(dates)}", key: "title") == ["O'Brien \"quoted\" é"])
            let blobs =
                (0..<70).map { "CAST(\"\(Data([UInt8($0)]).base64EncodedString())\", \"data\")" }.joined(
                    separator: ", ")
                + ", CAST(\"\(Data([0, 255]).base64EncodedString())\", \"data\"), CAST(\"\", \"data\")"
            #expect(
                try await store.values("Item", "blob IN {\(blobs)}", key: "title") == ["O'Brien \"quoted\" é", "other"])
            #expect(
                try await store.values("Item", "count IN {\(counts), nil}", key: "title") == ["O'Brien \"quoted\" é"])
        }
    }

    @Test func decimalsCompareAndAddByValue() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.insert(
                "Item",
                ["9.5", "10.25", "0.1", "0.2", "100"].map {
                    ["title": .string($0), "amount": .decimal(Decimal(string: $0)!), "price": .double(Double($0)!)]
                })
            #expect(
                try await store.values("Item", key: "title", sort: ["amount"]) == ["0.1", "0.2", "9.5", "10.25", "100"])
            #expect(
                try await store.values("Item", key: "title", sort: ["-amount"]) == [
                    "100", "10.25", "9.5", "0.2", "0.1",
                ])
            #expect(try await store.values("Item", "amount == \"10.250\"", key: "title") == ["10.25"])
            #expect(try await store.values("Item", "amount > 9.75", key: "title") == ["10.25", "100"])
            #expect(try await store.values("Item", "amount BETWEEN {0.15, 10}", key: "title") == ["9.5", "0.2"])
            #expect(
                try await store.values("Item", "amount == price", key: "title") == [
                    "9.5", "10.25", "0.1", "0.2", "100",
                ])
            let sums = try await store.aggregate(
                AggregateDescriptor(
                    entityName: "Item", predicate: try PredicateParser.parse("amount < 1"),
                    aggregations: [
                        Aggregation("sum", .sum, "amount"), Aggregation("avg", .avg, "amount"),
                        Aggregation("max", .max, "amount"), Aggregation("total", .sum, "price"),
                    ]))
            #expect(
                sums == [
                    [
                        "sum": .decimal(Decimal(string: "0.3")!), "avg": .decimal(Decimal(string: "0.15")!),
                        "max": .decimal(Decimal(string: "0.2")!), "total": .double(0.30000000000000004),
                    ]
                ])
        }
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
