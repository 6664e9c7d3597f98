import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Synchronization
import Testing

/// A grouped count split between the readers gives the rows one reader's count gives, reads one
/// snapshot, and merges its tables as one table would have counted.
@Suite struct ParallelGroupScanTests {
    /// Parts of 16 keys, split from 2 parts up, and the leader waits for the helpers to join or
    /// decline, so that small tables are split and the helpers count.
    static let smallParts = ParallelGroupScan.Options(partKeys: 16, minimumParts: 2, leaderWaitsForHelpers: true)

    @Test func splitCountsMatchSQLiteGroupBy() async throws {
        var helperParts = 0
        try await HashAggregateTests.randomCounts(100, seed: 11) { store, index, descriptor, grouped in
            let helpers = store.readers.readerCount - 1
            let split = try await store.aggregate(
                descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit,
                split: Self.smallParts, tryHere: false)
            #expect(split.hashed, "case \(index): \(descriptor)")
            #expect(
                split.helpersJoined == helpers,
                "case \(index): the helpers' snapshots are the leader's, as nothing is written")
            #expect(split.rows == grouped.rows, "case \(index): \(descriptor)")
            helperParts += split.helperParts
        }
        // 400 rows in parts of 16 keys: the helpers took some of the 25 parts of most counts.
        #expect(helperParts > 100)
    }

    @Test func aHelperThatBeginsAfterACommitLeavesThePartsToTheLeader() async throws {
        try await withStore(Catalog.schema) { store, path in
            try await store.insert(
                "Item",
                (0..<200).map {
                    ["title": .string("t\($0)"), "rank": .int(Int64($0 % 4)), "label": .string("l\($0 % 3)")]
                })
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["label"], aggregations: [Aggregation("n", .count)])
            let before = try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: 0).rows
            // Between the leader's snapshot and the helper's, another connection (as another
            // process would) relabels every other item.
            let failure = FailureNote()
            var options = Self.smallParts
            options.afterLeaderSnapshot = {
                do {
                    let other = try SQLiteConnection(path: path, role: .reader)
                    try other.run("UPDATE \"Item\" SET \"label\" = 'changed' WHERE \"_pk\" % 2 = 0")
                    other.close(checkpoint: false)
                } catch {
                    failure.note.withLock { $0 = "\(error)" }
                }
            }
            let split = try await store.aggregate(
                descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit, split: options, tryHere: false)
            #expect(failure.note.withLock { $0 } == nil)
            #expect(split.hashed)
            #expect(split.helpersJoined == 0)
            #expect(split.rows == before, "the count reads the leader's snapshot only")
            // The update did commit: a count now sees it.
            let after = try await store.aggregate(
                descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit, split: Self.smallParts,
                tryHere: false)
            #expect(after.rows.first { $0["label"] == .string("changed") }?["n"] == .int(100))
            #expect(after.helpersJoined == store.readers.readerCount - 1)
        }
    }

    /// A grouped count the readers would split goes to a reader's queue without being tried on
    /// the calling thread, where it would have run past the budget and been counted again; a
    /// table too small to split is counted on the calling thread.
    @Test func aCountThatWouldBeSplitIsNotTriedOnTheCallingThread() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["label"], aggregations: [Aggregation("n", .count)])
            // 20 keys: two parts of 16, as many as smallParts splits from.
            try await store.insert(
                "Item", (0..<20).map { ["title": .string("t\($0)"), "label": .string("l\($0 % 3)")] })
            let split = try await store.aggregate(
                descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit, split: Self.smallParts)
            #expect(store.readsMovedToReaderQueues == 1)
            #expect(split.hashed)
            #expect(split.helpersJoined == store.readers.readerCount - 1, "split on the queue, with the helpers")
            #expect(split.rows.map { $0["n"] } == [.int(7), .int(7), .int(6)])
            // Without splitting from so few parts, the same count runs here, within the budget.
            var whole = Self.smallParts
            whole.minimumParts = 3
            let here = try await store.aggregate(
                descriptor, overlay: nil, hashedGroupLimit: HashAggregate.groupLimit, split: whole)
            #expect(store.readsMovedToReaderQueues == 1)
            #expect(here.helpersJoined == 0)
            #expect(here.rows == split.rows)
        }
    }

    @Test func groupsPastTheLimitTogetherFallBackToGroupBy() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await store.insert("Item", (0..<120).map { ["title": .string("t\($0)"), "rank": .int(0)] })
            let descriptor = AggregateDescriptor(
                entityName: "Item", groupBy: ["title"], aggregations: [Aggregation("n", .count)])
            // 120 groups against a limit of 100: whichever reader counts which parts, one table
            // or the merged one has too many.
            let split = try await store.aggregate(
                descriptor, overlay: nil, hashedGroupLimit: 100, split: Self.smallParts, tryHere: false)
            #expect(!split.hashed)
            #expect(split.rows.count == 120)
            #expect(split.rows == (try await store.aggregate(descriptor, overlay: nil, hashedGroupLimit: 0).rows))
        }
    }

    @Test func mergedTablesCountAsOneTable() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try SQLiteConnection(
                path: directory.appendingPathComponent("t.sqlite").path, role: .writer)
            defer { connection.close(checkpoint: false) }
            // Keys of every storage class, short and long, NULL among them, in two overlapping
            // ranges of rows: 1-150 and 100-260.
            try connection.run("CREATE TABLE t (n INTEGER PRIMARY KEY, a TEXT, b INTEGER)")
            try connection.run(
                """
                WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 260)
                INSERT INTO t SELECT n, CASE WHEN n % 7 = 0 THEN NULL ELSE printf('%.*c', n % 23, 'k') END,
                                        CASE WHEN n % 5 = 0 THEN NULL ELSE n % 11 END FROM r
                """)
            func count(_ keys: [AttributeType], _ columns: String, _ range: ClosedRange<Int>, limit: Int = 1_000) throws
                -> GroupTable?
            {
                let empty = GroupTable(keyTypes: keys, counterCount: 2, groupLimit: limit)
                return try connection.groupCounter.count(into: empty) {
                    try connection.run(
                        "SELECT \(GroupCounter.functionName)(\(columns), 1, b) FROM t WHERE n BETWEEN \(range.lowerBound) AND \(range.upperBound)"
                    )
                }
            }
            for (keys, columns) in [([AttributeType.string], "a"), ([.int], "b"), ([.string, .int], "a, b")] {
                var merged = try #require(try count(keys, columns, 1...150))
                try merged.merge(try #require(try count(keys, columns, 100...260)))
                let whole = try #require(try count(keys, columns, 1...260))
                // Rows 100-150 are counted twice in the merged table.
                let twice = try #require(try count(keys, columns, 100...150))
                let paths = keys.indices.map { PropertyPath(["k\($0)"]) }
                func counts(_ table: GroupTable) throws -> [[Value]: [Int64]] {
                    var result: [[Value]: [Int64]] = [:]
                    for group in 0..<table.groupCount {
                        result[try table.keys(of: group, paths: paths)] = [
                            table.counts(group, 0), table.counts(group, 1),
                        ]
                    }
                    return result
                }
                var expected = try counts(whole)
                for (key, extra) in try counts(twice) { expected[key] = zip(expected[key]!, extra).map { $0 + $1 } }
                #expect(try counts(merged) == expected, "keys \(columns)")
                #expect(merged.groupCount == whole.groupCount, "keys \(columns)")
            }
            // Each part fits a limit the two together pass.
            var first = try #require(try count([.int], "n", 1...60, limit: 100))
            let second = try #require(try count([.int], "n", 61...120, limit: 100))
            #expect(throws: GroupTable.GivenUp.self) { try first.merge(second) }
        }
    }

    @Test func partsCoverTheRangeOnce() {
        #expect(ParallelGroupScan.split(1...10, partKeys: 4, maximumParts: 256) == [1...4, 5...8, 9...10])
        #expect(ParallelGroupScan.split(5...5, partKeys: 4, maximumParts: 256) == [5...5])
        let top = Int64.max
        let nearTop: [ClosedRange<Int64>] = [(top - 5)...(top - 2), (top - 1)...top]
        #expect(ParallelGroupScan.split((top - 5)...top, partKeys: 4, maximumParts: 256) == nearTop)
        let bottom = Int64.min
        let nearBottom: [ClosedRange<Int64>] = [bottom...bottom, (bottom + 1)...(bottom + 1)]
        #expect(ParallelGroupScan.split(bottom...(bottom + 1), partKeys: 1, maximumParts: 256) == nearBottom)
        // Sparse keys (any key another tool wrote) make at most the most parts, still covering
        // every key once, in order.
        for (range, most) in [(1...100, 8), (bottom...top, 256), (-5...top, 3), (0...1_000_000, 256)]
            as [(ClosedRange<Int64>, Int)]
        {
            let parts = ParallelGroupScan.split(range, partKeys: 4, maximumParts: most)
            #expect(
                parts.count <= most && parts.first?.lowerBound == range.lowerBound
                    && parts.last?.upperBound == range.upperBound, "\(range)")
            #expect(zip(parts, parts.dropFirst()).allSatisfy { $0.upperBound &+ 1 == $1.lowerBound }, "\(range)")
        }
    }
}

/// What went wrong on a thread a test does not run on.
private final class FailureNote: Sendable {
    let note = Mutex<String?>(nil)
}
