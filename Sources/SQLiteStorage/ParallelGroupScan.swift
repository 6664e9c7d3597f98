import Foundation
import ModelCore

/// A long grouped count split over the store's readers: the reader it runs on (the leader)
/// divides the table into parts by key, and the other readers (helpers) claim parts as the
/// leader does, each counting into a ``GroupTable`` of its own, merged at the end. Over 1M rows
/// one thread spends about half its time in SQLite's scan and half in the table, so a second
/// core nearly halves the count. Parts are claimed one at a time, so a helper that starts late,
/// or shares its core with other work, takes fewer.
///
/// Every part must be read in one snapshot. A helper's read transaction begins after the
/// leader's, so it joins only when its ``SnapshotMark`` equals the leader's: no commit, from any
/// connection in any process, came between them. Otherwise it leaves the parts to the leader.
/// A helper that has not started by the time the leader has claimed every part does not join.
final class ParallelGroupScan: @unchecked Sendable { // Mutable state is guarded by `condition`.
    struct Options: Sendable {
        /// Keys per part: about a millisecond of scanning, so that the reader that finishes
        /// last is not left with much (parts of 32,768 keys split 200,000 rows 4 to 3).
        var partKeys: Int64 = 8_192
        /// The fewest parts a scan is split into; a smaller table is counted by one reader.
        var minimumParts = 4
        /// The most parts: the keys of a sparse table (another tool may have written any key)
        /// are cut into parts of more keys.
        var maximumParts = 256
        /// For tests: the leader waits for every helper to join or decline before it counts.
        var leaderWaitsForHelpers = false
        /// For tests: called on the leader's thread once its snapshot is marked, before the
        /// helpers are asked.
        var afterLeaderSnapshot: (@Sendable () -> Void)?

        static let standard = Options()
    }

    private let sql: String
    private let parameters: [Value]
    private let rangeSQL: String
    private let parts: [ClosedRange<Int64>]
    private let mark: SnapshotMark
    /// The leader's empty table, which helpers' tables are made like.
    private let template: GroupTable

    private let condition = NSCondition()
    private var nextPart = 0
    private var helpersUndecided = 0
    private var helpersCounting = 0
    private var helpersJoined = 0
    private var helperParts = 0
    private var isJoinable = true
    private var isAbandoned = false
    private var helperTables: [GroupTable] = []
    private var helperGaveUp = false
    private var helperError: (any Error)?

    private init(
        sql: String, parameters: [Value], rangeSQL: String, parts: [ClosedRange<Int64>], mark: SnapshotMark,
        table: GroupTable
    ) {
        self.sql = sql
        self.parameters = parameters
        self.rangeSQL = rangeSQL
        self.parts = parts
        self.mark = mark
        self.template = GroupTable(like: table)
    }

    /// Counts `descriptor`'s rows into `table` as the leader, on `context`'s connection, inside a
    /// read transaction that has run no statement yet, with `helpers` when the table is large
    /// enough and their snapshots are the leader's. The filled table (nil when it gave up, see
    /// ``GroupTable/GivenUp``), and how many helpers joined and how many parts they counted.
    static func count(
        _ descriptor: AggregateDescriptor, entity: ResolvedEntity, into table: GroupTable, context: ReadContext,
        helpers: ReaderHelpers, options: Options
    ) throws -> Outcome {
        let connection = context.connection
        var compiler = context.compiler(for: entity)
        let sql = try compiler.groupScan(descriptor, keyRange: true)
        let rangeSQL = keyRangeSQL(entity, context: context)
        var range: (Int64, Int64)?
        let mark = try connection.markSnapshot { range = try keyRange(rangeSQL, on: connection) }
        let parts =
            range.map { split($0.0...$0.1, partKeys: options.partKeys, maximumParts: options.maximumParts) } ?? []
        guard let mark, helpers.count > 0, parts.count >= options.minimumParts else {
            // Alone: every key in one part.
            let filled = try connection.groupCounter.count(into: table) {
                if let (low, high) = range {
                    try connection.query(sql, compiler.parameters + [.int(low), .int(high)]) { _ in }
                }
            }
            return Outcome(table: filled, helpersJoined: 0, helperParts: 0)
        }
        let scan = ParallelGroupScan(
            sql: sql, parameters: compiler.parameters, rangeSQL: rangeSQL, parts: parts, mark: mark, table: table)
        options.afterLeaderSnapshot?()
        return try scan.lead(connection, table: table, helpers: helpers, waitForHelpers: options.leaderWaitsForHelpers)
    }

    /// Whether a count of `entity`'s rows would be split into parts (its keys span at least
    /// `options.minimumParts` of them), found with two look-ups at the ends of its key b-tree.
    /// Such a count is not tried on the calling thread: a count of 10,000 rows or so runs past
    /// ``ReaderPool/hereBudget``, and the rows it had counted there were counted again on the
    /// reader's queue (a millisecond and more of a 200,000-row count's ten).
    static func wouldSplit(_ entity: ResolvedEntity, context: ReadContext, options: Options) throws -> Bool {
        guard let (low, high) = try keyRange(keyRangeSQL(entity, context: context), on: context.connection) else {
            return false
        }
        let parts = split(low...high, partKeys: options.partKeys, maximumParts: options.maximumParts)
        return parts.count >= options.minimumParts
    }

    /// The statement of a table's lowest and highest keys: two subqueries, each of which finds
    /// its end of the key b-tree, where `min(…), max(…)` in one SELECT scans the table (or a
    /// covering index).
    private static func keyRangeSQL(_ entity: ResolvedEntity, context: ReadContext) -> String {
        let tableName = context.layout.table(for: entity).quoted
        return "SELECT (SELECT min(\"_pk\") FROM \(tableName)), (SELECT max(\"_pk\") FROM \(tableName))"
    }

    /// The lowest and highest keys `rangeSQL` (``keyRangeSQL(_:context:)``) finds; nil for an
    /// empty table.
    private static func keyRange(_ rangeSQL: String, on connection: SQLiteConnection) throws -> (Int64, Int64)? {
        var range: (Int64, Int64)?
        try connection.query(rangeSQL) { row in
            if let low = row.optionalInt64(0), let high = row.optionalInt64(1) { range = (low, high) }
        }
        return range
    }

    /// `range` in parts of `partKeys` keys (the last may be shorter), or of more keys where that
    /// would make more than `maximumParts` parts.
    static func split(_ range: ClosedRange<Int64>, partKeys: Int64, maximumParts: Int) -> [ClosedRange<Int64>] {
        // The number of keys less one, which fits in 64 bits even for the whole range of Int64.
        let span = UInt64(bitPattern: range.upperBound &- range.lowerBound)
        let fewest = span / UInt64(max(maximumParts, 1)) + 1
        let size = Int64(clamping: max(UInt64(max(partKeys, 1)), fewest))
        var parts: [ClosedRange<Int64>] = []
        var low = range.lowerBound
        while true {
            let (end, overflow) = low.addingReportingOverflow(size - 1)
            let high = overflow ? range.upperBound : min(end, range.upperBound)
            parts.append(low...high)
            guard high < range.upperBound else { return parts }
            low = high + 1
        }
    }

    /// A split count's table (nil when it gave up), and what its helpers did.
    struct Outcome {
        let table: GroupTable?
        let helpersJoined: Int
        let helperParts: Int
    }

    private func lead(_ connection: SQLiteConnection, table: GroupTable, helpers: ReaderHelpers, waitForHelpers: Bool)
        throws -> Outcome
    {
        condition.withLock { helpersUndecided = helpers.count }
        helpers.submit { [self] connection in help(connection) }
        if waitForHelpers { condition.withLock { while helpersUndecided > 0 { condition.wait() } } }
        let own: GroupTable?
        do {
            own = try count(on: connection, into: table).table
        } catch {
            abandon()
            throw error
        }
        let (tables, gaveUp, joined, parts) = try condition.withLock {
            isJoinable = false
            while helpersCounting > 0 { condition.wait() }
            if let helperError { throw helperError }
            return (helperTables, helperGaveUp, helpersJoined, helperParts)
        }
        guard var merged = own, !gaveUp else { return Outcome(table: nil, helpersJoined: joined, helperParts: parts) }
        do {
            for other in tables { try merged.merge(other) }
        } catch {
            return Outcome(table: nil, helpersJoined: joined, helperParts: parts)
        }
        return Outcome(table: merged, helpersJoined: joined, helperParts: parts)
    }

    /// A helper's part of the work, on its own reader's queue.
    private func help(_ connection: SQLiteConnection?) {
        var decided = false
        defer { if !decided { decide(joining: false) } }
        guard let connection else { return }
        try? connection.transaction(write: false) {
            let helperMark = try connection.markSnapshot { try connection.query(rangeSQL) { _ in } }
            decided = true
            guard decide(joining: helperMark == mark) else { return }
            let result = Result { try count(on: connection, into: GroupTable(like: template)) }
            condition.withLock {
                helpersCounting -= 1
                switch result {
                case .success(let (table?, parts)):
                    helperTables.append(table)
                    helperParts += parts
                case .success((nil, _)):
                    helperGaveUp = true
                    isAbandoned = true
                case .failure(let error):
                    helperError = error
                    isAbandoned = true
                }
                condition.broadcast()
            }
        }
    }

    /// Records a helper's decision; whether it joins (it may not once the leader has claimed
    /// every part or given up).
    @discardableResult
    private func decide(joining wantsToJoin: Bool) -> Bool {
        condition.withLock {
            helpersUndecided -= 1
            defer { condition.broadcast() }
            guard wantsToJoin, isJoinable, !isAbandoned else { return false }
            helpersCounting += 1
            helpersJoined += 1
            return true
        }
    }

    /// Counts the parts it can claim into `table` on `connection`: the table (nil when it gave
    /// up), and how many parts it counted.
    private func count(on connection: SQLiteConnection, into table: GroupTable) throws -> (
        table: GroupTable?, parts: Int
    ) {
        var parts = 0
        let filled = try connection.groupCounter.count(into: table) {
            while let part = claim() {
                try connection.query(sql, parameters + [.int(part.lowerBound), .int(part.upperBound)]) { _ in }
                parts += 1
            }
        }
        if filled == nil { abandon() }
        return (filled, parts)
    }

    private func claim() -> ClosedRange<Int64>? {
        condition.withLock {
            guard !isAbandoned, nextPart < parts.count else { return nil }
            defer { nextPart += 1 }
            return parts[nextPart]
        }
    }

    private func abandon() {
        condition.withLock { isAbandoned = true }
    }
}
