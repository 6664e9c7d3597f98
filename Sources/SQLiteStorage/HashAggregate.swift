import ModelCore
import ModelStorage

/// A grouped count computed in a hash table while SQLite scans the rows, as PostgreSQL's
/// HashAggregate does, instead of with SQLite's GROUP BY, which sorts every row before it counts.
/// Over 1M rows in 100 groups (this machine) the GROUP BY takes 0.3-0.6 s, counting the key
/// column's values alone 55-90 ms (sqlite3 shell), and this count 135-145 ms.
///
/// SQLite hands each row to the aggregate function `modeld_group_count` (``GroupCounter``), which
/// counts it into a ``GroupTable``.
///
/// It applies when every aggregation is a count and no group key is a double or a decimal, so
/// that every key is stored as an integer, text or bytes. Two keys are then the same group
/// exactly when their stored bytes are equal, and they sort as SQLite sorts them (NULL first,
/// integers by value, text and bytes byte by byte), so the rows are the ones SQLite's GROUP BY
/// would give. A key stored in another storage class than its type's (another tool wrote a real
/// into an integer column) makes ``rows(_:_:)`` give up with nil, and SQLite groups instead.
///
/// The table holds one entry per group. So that a page of a grouping by a nearly unique key
/// does not hold every group in memory, more than ``groupLimit`` groups also give up: SQLite's
/// sort spills to a temporary file.
struct HashAggregate {
    /// The most groups counted in a hash table (a few tens of megabytes).
    static let groupLimit = 100_000

    private let descriptor: AggregateDescriptor
    private let groupLimit: Int
    private let keyTypes: [AttributeType]

    /// The most keys and counts one grouped count takes (SQLite's functions take at most 127
    /// arguments).
    static let argumentLimit = 100

    init?(
        _ descriptor: AggregateDescriptor, entity: ResolvedEntity, schema: ResolvedSchema,
        groupLimit: Int = Self.groupLimit
    ) {
        guard groupLimit > 0, !descriptor.groupBy.isEmpty,
            descriptor.aggregations.allSatisfy({ $0.function == .count }),
            descriptor.groupBy.count + descriptor.aggregations.count <= Self.argumentLimit
        else { return nil }
        var keyTypes: [AttributeType] = []
        for path in descriptor.groupBy {
            guard let type = (try? schema.resolve(path, from: entity))?.attribute?.type, type != .double,
                type != .decimal
            else { return nil }
            keyTypes.append(type)
        }
        self.descriptor = descriptor
        self.keyTypes = keyTypes
        self.groupLimit = groupLimit
    }

    /// The aggregate's rows, counted by `counter` as `scan` runs the statement that calls it (see
    /// ``SQLCompiler/groupScan(_:)``); nil when a key is stored in another storage class than its
    /// type's, or when there are more than `groupLimit` groups.
    func rows(_ counter: GroupCounter, _ scan: () throws -> Void) throws -> [AggregateRow]? {
        guard let table = try counter.count(into: emptyTable, scan) else { return nil }
        return try rows(of: table)
    }

    /// A table to count this aggregate's rows into.
    var emptyTable: GroupTable {
        GroupTable(
            keyTypes: keyTypes, counterCount: descriptor.aggregations.count, groupLimit: groupLimit,
            countsEveryRow: descriptor.countsEveryRow)
    }

    /// The aggregate's rows from `table`, counted: sorted and paged.
    func rows(of table: GroupTable) throws -> [AggregateRow] {
        try page(table.sortedGroups(by: order)).map { group in
            var row: AggregateRow = [:]
            for (path, key) in zip(descriptor.groupBy, try table.keys(of: group, paths: descriptor.groupBy)) {
                row[path.description] = key
            }
            for (counter, aggregation) in descriptor.aggregations.enumerated() {
                row[aggregation.name] = .int(table.counts(group, counter))
            }
            return row
        }
    }

    /// The sort: `sortBy`, then the group keys ascending, as ``SQLCompiler/aggregate(_:)`` orders.
    private var order: [GroupTable.SortKey] {
        let keys = descriptor.groupBy.map(\.description)
        let names = descriptor.aggregations.map(\.name)
        var order: [GroupTable.SortKey] = descriptor.sortBy.compactMap { sort in
            if let index = keys.firstIndex(of: sort.key) {
                return .init(column: .key(index), ascending: sort.ascending)
            }
            if let index = names.firstIndex(of: sort.key) {
                return .init(column: .counter(index), ascending: sort.ascending)
            }
            return nil
        }
        order += keys.indices.map { .init(column: .key($0), ascending: true) }
        return order
    }

    private func page(_ groups: [Int]) -> ArraySlice<Int> {
        let start = min(descriptor.offset, groups.count)
        let end = descriptor.limit.map { min(groups.count, start + $0) } ?? groups.count
        return groups[start..<end]
    }
}

extension AggregateDescriptor {
    /// Whether every aggregation is a `count(*)`: the scan then passes the counters no argument
    /// (``SQLCompiler/groupScan(_:keyRange:)``) and the table counts every row it is given
    /// (``GroupTable/countsEveryRow``).
    var countsEveryRow: Bool { aggregations.allSatisfy { $0.keyPath == nil } }
}
