import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// Grouped counts computed in a hash table give exactly the rows SQLite's GROUP BY gives.
@Suite struct HashAggregateTests {
    /// Labels whose groups and order only bytes tell apart: "é" precomposed and decomposed are
    /// equal Swift strings, but different text to SQLite; NUL inside text; prefixes.
    static let labels: [String?] = [nil, "", "A", "a", "a\u{0}", "a\u{0}b", "ab", "b", "e\u{301}", "\u{E9}"]

    @Test func labelsGroupAndSortByTheirBytes() async throws {
        try await withStore(Catalog.schema) { store, _ in
            // Label i is stored i + 1 times.
            var objects: [[String: Value]] = []
            for (index, label) in Self.labels.enumerated() {
                for copy in 0...index {
                    objects.append(["title": .string("t\(index)-\(copy)"), "label": label.map(Value.string) ?? .null])
                }
            }
            try await store.insert("Item", objects)
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["label"], aggregations: [Aggregation("n", .count)])
            let outcome = try await store.aggregate(
                descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            let (rows, hashed) = (outcome.rows, outcome.hashed)
            #expect(hashed)
            // Byte order: NULL, then "" < "A" < "a" < "a\0" < "a\0b" < "ab" < "b" < "e\u{301}" (65 CC 81) < "\u{E9}" (C3 A9).
            let expected: [AggregateRow] = Self.labels.enumerated().map { index, label in
                ["label": label.map(Value.string) ?? .null, "n": .int(Int64(index + 1))]
            }
            #expect(rows.count == Self.labels.count)
            #expect(rows == expected)
            let byCount = try await store.aggregate(
                AggregateDescriptor(
                    entityName: "Item", groupBy: ["label"], aggregations: [Aggregation("n", .count)],
                    sortBy: [AggregateSort("n", ascending: false)], offset: 1, limit: 3),
                overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(byCount.hashed)
            #expect(byCount.rows.map { $0["n"] } == [.int(9), .int(8), .int(7)])
        }
    }

    /// Keys of up to 15 bytes are compared as two words read in overlapping pieces (see
    /// `ShortKey`): keys of every length from 0 to 17 bytes that differ in one byte only, at
    /// each position, are each a group of their own.
    @Test func keysThatDifferInOneByteAtAnyPositionAreDifferentGroups() async throws {
        try await withStore(Catalog.schema) { store, _ in
            var labels: [String] = [""]
            for length in 1...17 {
                let base = Array(repeating: UInt8(ascii: "a"), count: length)
                labels.append(String(decoding: base, as: UTF8.self))
                for position in 0..<length {
                    var changed = base
                    changed[position] = UInt8(ascii: "b")
                    labels.append(String(decoding: changed, as: UTF8.self))
                }
            }
            // Label i is stored i % 3 + 1 times.
            var objects: [[String: Value]] = []
            for (index, label) in labels.enumerated() {
                for copy in 0...(index % 3) {
                    objects.append(["title": .string("t\(index)-\(copy)"), "label": .string(label)])
                }
            }
            try await store.insert("Item", objects)
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["label"], aggregations: [Aggregation("n", .count)])
            let hashed = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(hashed.hashed)
            let counts = Dictionary(
                uniqueKeysWithValues: labels.enumerated().map {
                    (Value.string($0.element), Value.int(Int64($0.offset % 3 + 1)))
                })
            #expect(hashed.rows.count == labels.count)
            for row in hashed.rows { #expect(row["n"] == counts[row["label"] ?? .null], "\(row)") }
            let grouped = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: 0)
            #expect(hashed.rows == grouped.rows)
        }
    }

    @Test func randomGroupedCountsMatchSQLiteGroupBy() async throws {
        var hashedCases = 0
        try await Self.randomCounts(150, seed: 7) { store, index, descriptor, grouped in
            let hashed = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(!grouped.hashed)
            let firstDifference = zip(hashed.rows, grouped.rows).enumerated().first { $0.element.0 != $0.element.1 }?
                .offset
            let same = hashed.rows == grouped.rows
            #expect(
                same,
                "case \(index): \(descriptor): \(hashed.rows.count) rows hashed, \(grouped.rows.count) grouped, first difference at \(firstDifference.map(String.init) ?? "the end")"
            )
            if hashed.hashed { hashedCases += 1 }
        }
        // Every case groups and counts, and none of their keys is a double or a decimal.
        #expect(hashedCases == 150)
    }

    @Test func pendingChangesAreCountedInTheirGroups() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let ids = try await store.insert(
                "Item", (0..<6).map { ["title": .string("t\($0)"), "label": .string($0 < 4 ? "x" : "y")] })
            let overlay = ChangeSet(
                inserts: [
                    InsertedObject(
                        id: store.temporary("Item"), attributes: ["title": .string("new"), "label": .string("z")])
                ],
                updates: [UpdatedObject(id: ids[0], attributes: ["label": .string("y")])],
                deletes: [DeletedObject(id: ids[1])])
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["label"], aggregations: [Aggregation("n", .count)])
            let hashed = try await store.aggregate(
                descriptor, overlay: overlay, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(hashed.hashed)
            #expect(
                hashed.rows == [
                    ["label": .string("x"), "n": .int(2)], ["label": .string("y"), "n": .int(3)],
                    ["label": .string("z"), "n": .int(1)],
                ])
        }
    }

    @Test func aRealStoredInAnIntegerColumnIsLeftToSQLite() async throws {
        try await withStore(Catalog.schema) { store, path in
            try await store.insert("Item", [1, 1, 2, 3].map { ["title": .string("t\($0)"), "count": .int($0)] })
            // Another tool writes a real into the integer column.
            let other = try SQLiteConnection(path: path, role: .writer)
            try other.execute(#"UPDATE "Item" SET "count" = 2.5 WHERE "count" = 3"#)
            other.close()
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["count"], aggregations: [Aggregation("n", .count)])
            let result = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(!result.hashed)
            #expect(
                result.rows == [
                    ["count": .int(1), "n": .int(2)], ["count": .int(2), "n": .int(1)],
                    ["count": .double(2.5), "n": .int(1)],
                ])
        }
    }

    @Test func keysStoredInAnotherStorageClassAreLeftToSQLite() async throws {
        try await withStore(Catalog.schema) { store, path in
            try await store.insert(
                "Item",
                [1, 1, 7, 7].map { ["title": .string("t\($0)"), "count": .int($0), "label": .string("l\($0)")] })
            // Another tool writes text into the integer column (text that is not a number keeps
            // its storage class there) and a blob into the text column.
            let other = try SQLiteConnection(path: path, role: .writer)
            try other.execute(#"UPDATE "Item" SET "count" = 'seven' WHERE "_pk" = (SELECT max("_pk") FROM "Item")"#)
            try other.execute(#"UPDATE "Item" SET "label" = x'6c31' WHERE "_pk" = (SELECT min("_pk") FROM "Item")"#)
            other.close()
            for keys: [PropertyPath] in [["count"], ["label"], ["title", "count"], ["label", "title"]] {
                let descriptor = AggregateDescriptor(
                    entityName: "Item", groupBy: keys, aggregations: [Aggregation("n", .count)])
                let result = try await store.aggregate(
                    descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
                #expect(!result.hashed, "\(keys)")
                let grouped = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: 0)
                #expect(result.rows == grouped.rows, "\(keys)")
                // SQLite keeps the text apart from the integers, and the blob 'l1' from the text.
                #expect(result.rows.count == 3, "\(keys)")
            }
            // The connections count in hash tables again afterwards.
            let byTitle = try await store.aggregate(
                AggregateDescriptor(entityName: "Item", groupBy: ["title"], aggregations: [Aggregation("n", .count)]),
                overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(byTitle.hashed)
            #expect(byTitle.rows == [["title": .string("t1"), "n": .int(2)], ["title": .string("t7"), "n": .int(2)]])
        }
    }

    @Test func aStoredKeyThatIsNotItsTypeIsAStorageFailureEitherWay() async throws {
        try await withStore(Catalog.schema) { store, path in
            try await store.insert("Item", [["title": .string("a"), "code": .uuid(UUID())]])
            let other = try SQLiteConnection(path: path, role: .writer)
            try other.execute(#"UPDATE "Item" SET "code" = 'not-a-uuid'"#)
            other.close()
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["code"], aggregations: [Aggregation("n", .count)])
            for limit in [HashAggregate.groupLimit, 0] {
                let error = await modelError {
                    _ = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: limit)
                }
                #expect(error?.code == .storageFailure, "limit \(limit)")
                #expect(error?.message.contains("'not-a-uuid'") == true, "limit \(limit): \(String(describing: error))")
                #expect(
                    error?.message.contains("not a valid uuid") == true, "limit \(limit): \(String(describing: error))")
            }
        }
    }

    @Test func moreKeysAndCountsThanAFunctionTakesAreLeftToSQLite() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.insert(
                "Item",
                [["title": .string("a"), "label": .string("x")], ["title": .string("a")], ["title": .string("b")]])
            // SQLite's functions take at most 127 arguments; this count would need 130.
            let aggregations = (0..<129).map { Aggregation("n\($0)", .count, $0.isMultiple(of: 2) ? nil : "label") }
            let descriptor = AggregateDescriptor(entityName: "Item", groupBy: ["title"], aggregations: aggregations)
            let result = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(!result.hashed)
            #expect(result.rows.map { $0["title"] } == [.string("a"), .string("b")])
            #expect(result.rows.map { $0["n0"] } == [.int(2), .int(1)])
            #expect(result.rows.map { $0["n127"] } == [.int(1), .int(0)])
        }
    }

    @Test func moreGroupsThanTheLimitAreLeftToSQLite() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.insert("Item", (0..<12).map { ["title": .string("t\($0 % 6)")] })
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["title"], aggregations: [Aggregation("n", .count)], limit: 2)
            let expected: [AggregateRow] = [
                ["title": .string("t0"), "n": .int(2)], ["title": .string("t1"), "n": .int(2)],
            ]
            let withinLimit = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: 6)
            #expect(withinLimit.hashed)
            #expect(withinLimit.rows == expected)
            let pastLimit = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: 5)
            #expect(!pastLimit.hashed)
            #expect(pastLimit.rows == expected)
        }
    }

    @Test func aggregatesWithoutCountsOrWithDoubleKeysAreLeftToSQLite() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.insert(
                "Item",
                [
                    ["title": .string("a"), "price": .double(-0.0), "count": .int(2)],
                    ["title": .string("b"), "price": .double(0.0), "count": .int(3)],
                ])
            let sum = AggregateDescriptor(
                entityName: "Item", groupBy: ["title"], aggregations: [Aggregation("s", .sum, "count")])
            #expect(
                try await store.aggregate(sum, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit).hashed == false
            )
            let byPrice = AggregateDescriptor(
                entityName: "Item", groupBy: ["price"], aggregations: [Aggregation("n", .count)])
            let result = try await store.aggregate(byPrice, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit)
            #expect(!result.hashed)
            // -0.0 and 0.0 are one group to SQLite.
            #expect(result.rows.map { $0["n"] } == [.int(2)])
        }
    }

    // MARK: Data

    /// `count` random grouped counts (``descriptor(_:)``) over a store filled by ``fill(_:_:)``,
    /// drawn from `seed`: `body` is given each with the rows SQLite's GROUP BY gives.
    static func randomCounts(
        _ count: Int, seed: UInt64,
        _ body: (SQLiteStore, Int, AggregateDescriptor, AggregateOutcome) async throws -> Void
    ) async throws {
        try await withStore(Catalog.schema) { store, _ in
            var random = SeededRandom(seed: seed)
            try await fill(store, &random)
            for index in 0..<count {
                let descriptor = try descriptor(&random)
                try await body(
                    store, index, descriptor, try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: 0))
            }
        }
    }

    static let shelfNames = ["north", "south", "", "Nord", "n\u{0}"]

    /// 400 items with values drawn from small pools (so groups repeat), and 40 shelves.
    static func fill(_ store: SQLiteStore, _ random: inout SeededRandom) async throws {
        let shelves = try await store.insert(
            "Shelf", (0..<40).map { ["name": .string(shelfNames[$0 % shelfNames.count])] })
        let counts: [Int64?] = [nil, 0, -1, 1, 42, .min, .max]
        let blobs: [Data?] = [nil, Data(), Data([0]), Data([0, 0]), Data([255]), Data([1, 2])]
        let dates: [Value] = [
            .null, date("2026-01-01"), date("1969-12-31T23:59:59.999999Z"), date("2026-01-01T00:00:00.000001Z"),
        ]
        let codes: [UUID?] = [
            nil, UUID(uuidString: "00000000-0000-0000-0000-000000000001"),
            UUID(uuidString: "FFFFFFFF-0000-0000-0000-000000000000"),
        ]
        let links: [URL?] = [nil, URL(string: "https://a.example/x"), URL(string: "https://a.example/x?y")]
        let metas: [String?] = [nil, "{}", "[1,2]", "{\"a\":1}"]
        var objects: [[String: Value]] = []
        for index in 0..<400 {
            objects.append([
                "title": .string("t\(index % 37)"),
                "rank": .int(Int64(index % 5)),
                "label": random.pick(labels).map(Value.string) ?? .null,
                "count": random.pick(counts).map(Value.int) ?? .null,
                "price": random.chance(0.5) ? .double(Double(random.int(0...3)) / 2) : .null,
                "inStock": random.chance(0.3) ? .null : .bool(random.chance(0.5)),
                "added": random.pick(dates),
                "blob": random.pick(blobs).map(Value.data) ?? .null,
                "code": random.pick(codes).map(Value.uuid) ?? .null,
                "link": random.pick(links).map(Value.url) ?? .null,
                "meta": random.pick(metas).map(Value.json) ?? .null,
                "amount": random.chance(0.5) ? .decimal(Decimal(random.int(0...9))) : .null,
            ])
        }
        let items = try await store.insert("Item", objects)
        // 160 items on shelves, 4 to a shelf (a shelf holds at most 5); the others on none.
        let shelved = items.enumerated().filter { $0.offset % 5 < 2 }.map(\.element)
        let updates = shelved.enumerated().map { ordinal, item in
            UpdatedObject(id: item, relationships: ["shelf": .toOne(shelves[ordinal % shelves.count])])
        }
        _ = try await store.save(ChangeSet(updates: updates))
    }

    static let keys: [PropertyPath] = [
        "label", "count", "inStock", "added", "blob", "code", "link", "meta", "title", "rank", "shelf.name",
    ]
    static let counted: [PropertyPath?] = [nil, "label", "price", "amount", "shelf.name"]
    static let predicates = [
        nil, "count > 0", "label != nil", "shelf.name BEGINSWITH \"n\"", "inStock == YES OR price > 0.5",
    ]

    /// A random grouped count: 1-3 keys, 0-3 counts, a sort, maybe a predicate and a page.
    static func descriptor(_ random: inout SeededRandom) throws -> AggregateDescriptor {
        var groupBy: [PropertyPath] = []
        for _ in 0..<random.int(1...3) {
            let key = random.pick(keys)
            if !groupBy.contains(key) { groupBy.append(key) }
        }
        let aggregations = (0..<random.int(0...3)).map { Aggregation("n\($0)", .count, random.pick(counted)) }
        let names = groupBy.map(\.description) + aggregations.map(\.name)
        let sortBy = (0..<random.int(0...2)).map { _ in AggregateSort(random.pick(names), ascending: random.chance(0.5))
        }
        let predicate = try random.pick(predicates).map(PredicateParser.parse)
        return AggregateDescriptor(
            entityName: "Item", predicate: predicate, groupBy: groupBy, aggregations: aggregations, sortBy: sortBy,
            offset: random.chance(0.3) ? random.int(0...5) : 0, limit: random.chance(0.3) ? random.int(0...10) : nil)
    }
}
