import ModelCore
import ModelStorage

/// Writes a group's history rows (``DeferredHistory``) before it commits: each table's rows in
/// statements of 32, 16, 8, 4, 2 and 1 rows, so that a few statements of each size, prepared
/// once and kept in the connection's cache, write any number of rows.
enum DeferredHistoryWriter {
    /// Writes `history`'s rows on the writer's connection, in its transaction.
    static func write(_ history: DeferredHistory, _ connection: SQLiteConnection) throws {
        try write(history.transactions, width: DeferredHistory.transactionWidth, with: transactionSQL, connection)
        try write(history.changes, width: DeferredHistory.changeWidth, with: changeSQL, connection)
    }

    /// The most rows one statement writes: 32 rows of 8 values, 256 parameters.
    static let largestStatement = 32

    private static func write(_ values: [Value], width: Int, with statements: [String], _ connection: SQLiteConnection)
        throws
    {
        var start = 0
        while start < values.count {
            let rows = (values.count - start) / width
            // The largest power of two that fits, up to 32; its statement is at log2(size).
            let size = min(largestStatement, 1 << (Int.bitWidth - 1 - rows.leadingZeroBitCount))
            let first = start
            try connection.runEach(
                statements[size.trailingZeroBitCount], over: CollectionOfOne(first), bindsEveryParameter: true
            ) {
                first, statement in
                for index in 0..<(size * width) {
                    try statement.bind(values[first + index], at: Int32(index + 1))
                }
            }
            start += size * width
        }
    }

    /// `INSERT … VALUES (…), (…)` of 1, 2, 4 … 32 rows of `width` parameters each.
    private static func statements(into table: String, columns: String, width: Int) -> [String] {
        var statements: [String] = []
        var size = 1
        while size <= largestStatement {
            let rows = (0..<size).map { row in
                "(" + (1...width).map { "?\(row * width + $0)" }.joined(separator: ", ") + ")"
            }
            statements.append("INSERT INTO \(table) (\(columns)) VALUES " + rows.joined(separator: ", "))
            size *= 2
        }
        return statements
    }

    private static let transactionSQL = statements(
        into: StoreMetadata.transactionTable, columns: StoreMetadata.transactionColumns,
        width: DeferredHistory.transactionWidth)
    private static let changeSQL = statements(
        into: StoreMetadata.changeTable, columns: StoreMetadata.changeColumns, width: DeferredHistory.changeWidth)
}
