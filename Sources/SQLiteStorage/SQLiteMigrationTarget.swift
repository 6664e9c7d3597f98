import Foundation
import ModelCore
import ModelStorage

/// SQLite's statements and table shapes for ``RelationalMigration``, on the writer's connection.
struct SQLiteMigrationTarget: RelationalMigrationTarget {
    let connection: SQLiteConnection

    func run(_ sql: String, _ values: [Value]) throws {
        if values.isEmpty {
            try connection.execute(sql)
        } else {
            _ = try connection.run(sql, values)
        }
    }

    func placeholder(_ index: Int) -> String { "?\(index)" }

    func createTable(_ table: TableLayout) -> String {
        "CREATE TABLE \(table.quoted) (\(SQLiteLayout.columnDefinitions(table)))"
    }

    func createJoinTable(_ name: String) -> String {
        "CREATE TABLE \(SQL.quote(name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID"
    }

    func indexStatements(of layout: any SQLTableLayout) -> [String] {
        SQLiteLayout(layout.schema).createStatements.filter {
            $0.hasPrefix("CREATE INDEX") || $0.hasPrefix("CREATE UNIQUE INDEX")
        }
    }

    func columnDefinitions(_ column: TableLayout.Column, default: String?) -> [String] {
        ["\(SQL.quote(column.name)) \(SQL.declaration(column.type))" + (`default`.map { " DEFAULT \($0)" } ?? "")]
    }

    func storedColumns(_ column: TableLayout.Column) -> [String] { [column.name] }

    func assignments(_ column: TableLayout.Column, _ value: Value) -> [(String, Value)] { [(column.name, value)] }

    func constant(_ value: Value, for column: TableLayout.Column) -> String? { SQL.constant(value) }

    var sequenceTable: String { StoreMetadata.sequenceTable }
    var changeTable: String { StoreMetadata.changeTable }
}

extension SQL {
    /// `value` as an SQL constant stored as a bound value would be (dates as microseconds,
    /// decimals as canonical text…), for a column's `DEFAULT`; nil when it has none (a double
    /// that is not finite, text with a NUL).
    static func constant(_ value: Value) -> String? {
        switch value {
        case .null: return "NULL"
        case .int(let v): return String(v)
        case .double(let v): return v.isFinite ? "\(v)" : nil
        case .bool(let v): return v ? "1" : "0"
        case .date(let v): return String(v.microsecondsSince1970)
        case .string(let v), .json(let v): return v.contains("\0") ? nil : literal(v)
        case .uuid(let v): return literal(v.lowercasedText)
        case .url(let v): return literal(v.absoluteString)
        case .decimal(let v): return literal(v.canonicalText)
        case .data(let v): return "X'" + v.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}
