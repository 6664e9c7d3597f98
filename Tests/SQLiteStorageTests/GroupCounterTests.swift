import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// `modeld_group_count` counts the rows of one short key in C's table (CSQLite's group_count.h)
/// and every other row in Swift's (``GroupTable``): together they are the count of every row.
@Suite struct GroupCounterTests {
    @Test func shortTextKeysAreCountedInCTheOthersInSwiftAndTheyAddUp() async throws {
        try await withConnection { connection in
            try connection.execute("CREATE TABLE t(k TEXT)")
            // 1,500 short keys (more than the 1,024 groups C's table holds: the rest go to Swift),
            // 40 of 16 to 31 bytes (longer than it takes), and NULL; key i stored i % 3 + 1 times.
            var keys: [Value] = (0..<1_500).map { .string("s\($0)") }
            keys += (0..<40).map { .string(String(repeating: "l", count: 15 + $0 % 15) + "\($0)") }
            keys.append(.null)
            let expected = try Self.insert(keys, into: "t", on: connection)
            let table = try #require(try Self.count("k", of: "t", type: .string, on: connection))
            #expect(connection.groupCounter.groupsCountedInC == 1_024)
            #expect(try Self.groups(of: table) == expected)
        }
    }

    @Test func integerKeysAreCountedInCTheirExtremesIncluded() async throws {
        try await withConnection { connection in
            try connection.execute("CREATE TABLE t(k INTEGER)")
            let keys: [Value] =
                [.int(.min), .int(-1), .int(0), .int(1), .int(.max), .null] + (2..<400).map { .int($0 * 7) }
            let expected = try Self.insert(keys, into: "t", on: connection)
            let table = try #require(try Self.count("k", of: "t", type: .int, on: connection))
            #expect(connection.groupCounter.groupsCountedInC == keys.count)
            #expect(try Self.groups(of: table) == expected)
        }
    }

    /// Two keys, or a count of a column's values (which skips NULLs), are Swift's alone.
    @Test func countsOfMoreKeysOrOfValuesAreCountedInSwift() async throws {
        try await withConnection { connection in
            try connection.execute("CREATE TABLE t(k TEXT)")
            let expected = try Self.insert([.string("a"), .string("b"), .null], into: "t", on: connection)
            let byValues = GroupTable(keyTypes: [.string], counterCount: 1, groupLimit: 100, countsEveryRow: false)
            let values = try #require(
                try connection.groupCounter.count(into: byValues) {
                    try connection.run("SELECT \(GroupCounter.functionName)(k, k) FROM t", cached: false)
                })
            #expect(connection.groupCounter.groupsCountedInC == 0)
            // The NULL group's row has no value to count.
            #expect(try Self.groups(of: values) == expected.merging([.null: 0]) { _, new in new })
            let byTwo = GroupTable(
                keyTypes: [.string, .string], counterCount: 1, groupLimit: 100, countsEveryRow: true)
            let two = try #require(
                try connection.groupCounter.count(into: byTwo) {
                    try connection.run("SELECT \(GroupCounter.functionName)(k, k) FROM t", cached: false)
                })
            #expect(connection.groupCounter.groupsCountedInC == 0)
            #expect(two.groupCount == 3)
        }
    }

    /// A key stored in another storage class than its type's goes to Swift, which gives up; so
    /// does a count whose groups in the two tables together pass the limit.
    @Test func anotherStorageClassOrTooManyGroupsGiveUp() async throws {
        try await withConnection { connection in
            // No type: an integer stays one.
            try connection.execute("CREATE TABLE t(k)")
            _ = try Self.insert((0..<12).map { .string("k\($0)") }, into: "t", on: connection)
            #expect(try Self.count("k", of: "t", type: .string, on: connection, limit: 12) != nil)
            #expect(try Self.count("k", of: "t", type: .string, on: connection, limit: 11) == nil)
            try connection.run("INSERT INTO t(k) VALUES (5)")
            #expect(try Self.count("k", of: "t", type: .string, on: connection) == nil)
        }
    }

    /// A call with other arguments than the count's keys and counters, or outside a count, is
    /// refused with SQLite's error rather than counted.
    @Test func callsWithOtherArgumentsOrOutsideACountAreRefused() async throws {
        try await withConnection { connection in
            try connection.execute("CREATE TABLE t(k TEXT)")
            _ = try Self.insert([.string("a")], into: "t", on: connection)
            // A count of every row takes the key alone.
            let empty = GroupTable(keyTypes: [.string], counterCount: 1, groupLimit: 100, countsEveryRow: true)
            #expect(empty.argumentCount == 1)
            let wrong = #expect(throws: ModelError.self) {
                _ = try connection.groupCounter.count(into: empty) {
                    try connection.run("SELECT \(GroupCounter.functionName)(k, 1) FROM t", cached: false)
                }
            }
            #expect(wrong?.message.contains("wrong number of arguments") == true, "\(String(describing: wrong))")
            let outside = #expect(throws: ModelError.self) {
                try connection.run("SELECT \(GroupCounter.functionName)(k) FROM t", cached: false)
            }
            #expect(outside?.message.contains("outside a grouped count") == true, "\(String(describing: outside))")
        }
    }

    // MARK: Helpers

    private func withConnection(_ body: (SQLiteConnection) throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let connection = try SQLiteConnection(
                path: directory.appendingPathComponent("counts.sqlite").path, role: .writer)
            defer { connection.close(checkpoint: false) }
            try body(connection)
        }
    }

    /// Inserts key i (i % 3 + 1) times; how many times each key was inserted.
    private static func insert(_ keys: [Value], into table: String, on connection: SQLiteConnection) throws
        -> [Value: Int64]
    {
        var inserted: [Value: Int64] = [:]
        try connection.execute("BEGIN")
        for (index, key) in keys.enumerated() {
            for _ in 0...(index % 3) {
                try connection.run("INSERT INTO \(table)(k) VALUES (?1)", [key])
                inserted[key, default: 0] += 1
            }
        }
        try connection.execute("COMMIT")
        return inserted
    }

    /// `column`'s rows counted by the connection's counter, every row counted (`count(*)`, which
    /// takes no argument).
    private static func count(
        _ column: String, of table: String, type: AttributeType, on connection: SQLiteConnection,
        limit: Int = HashAggregate.groupLimit
    ) throws -> GroupTable? {
        let empty = GroupTable(keyTypes: [type], counterCount: 1, groupLimit: limit, countsEveryRow: true)
        return try connection.groupCounter.count(into: empty) {
            try connection.run("SELECT \(GroupCounter.functionName)(\(column)) FROM \(table)", cached: false)
        }
    }

    /// Each group's first key and first count.
    private static func groups(of table: GroupTable) throws -> [Value: Int64] {
        var groups: [Value: Int64] = [:]
        for group in 0..<table.groupCount {
            let key = try table.keys(of: group, paths: [PropertyPath(["k"])])[0]
            #expect(groups[key] == nil, "\(key) is one group")
            groups[key] = table.counts(group, 0)
        }
        return groups
    }
}
