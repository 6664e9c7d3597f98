import Foundation
import ModelCore

/// The Item rows every system gets: five attributes, `score` indexed, row `i` the same
/// everywhere (numbered from 1, as primary keys are).
enum Dataset {
    static let categories = 100
    static let epoch = Date(timeIntervalSince1970: 1_767_225_600) // 2026-01-01

    struct Row {
        let name: String
        let category: String
        let score: Int
        let price: Double
        let created: Date
    }

    static func row(_ i: Int) -> Row {
        Row(
            name: "item-\(i)", category: "c\(i % categories)", score: (i &* 7919) % 1_000_003,
            price: Double(i % 10_000) / 100, created: epoch.addingTimeInterval(Double(i)))
    }

    static let schemaJSON = """
        {"entities": [{"name": "Item",
          "attributes": [{"name": "name", "type": "string"}, {"name": "category", "type": "string"},
                         {"name": "score", "type": "int"}, {"name": "price", "type": "double"},
                         {"name": "created", "type": "date"}],
          "indexes": [["score"]]}]}
        """

    static func schema() throws -> Schema { try Schema(json: schemaJSON) }

    static func insert(_ i: Int) -> ObjectEdit {
        let row = row(i)
        return .insert(
            entity: "Item",
            attributes: [
                "name": .string(row.name), "category": .string(row.category), "score": .int(Int64(row.score)),
                "price": .double(row.price), "created": .date(Timestamp(row.created)),
            ], relationships: [:], id: nil)
    }

    /// Workload 5's grouped count: objects per category.
    static let groupedCount = AggregateDescriptor(
        entityName: "Item", groupBy: [PropertyPath(["category"])], aggregations: [Aggregation("count", .count)])

    /// The lower bound of the indexed query's range: `score >= lo ORDER BY score LIMIT 50`.
    static func queryBound(_ n: Int) -> Int { (n &* 104_729) % 990_000 }

    static let sql = """
        CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, score INTEGER NOT NULL,
                          price REAL NOT NULL, created REAL NOT NULL);
        CREATE INDEX item_score ON item(score);
        """
}

/// A deterministic sequence of row numbers in 1...n, for point reads.
struct RowPicker {
    private var state: UInt64
    let rows: Int

    init(rows: Int, seed: UInt64) {
        self.rows = rows
        state = seed | 1
    }

    mutating func next() -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Int(state % UInt64(rows)) + 1
    }
}
