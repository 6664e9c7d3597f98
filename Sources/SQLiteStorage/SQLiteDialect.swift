import Foundation
import ModelCore
import ModelStorage

/// SQLite's SQL for ``SQLCompiler``: modeld's semantics through the functions and the collation
/// the backend registers on every connection (``SQLiteFunctions``).
struct SQLiteDialect: SQLDialect {
    static let shared = SQLiteDialect()

    func placeholder(_ index: Int, for value: Value) -> String { "?\(index)" }

    func constant(_ value: Bool) -> String { value ? "1" : "0" }

    func order(ascending: Bool) -> String { ascending ? " ASC" : " DESC" }

    var unlimited: String { "-1" }
    var readsEntityOfOneEntityTable: Bool { false }

    func same(_ a: String, _ b: String, negated: Bool) -> String {
        negated ? "(\(a) IS NOT \(b))" : "(\(a) IS \(b))"
    }

    var decimalOrder: String { " COLLATE \(SQLiteFunctions.decimalCollation)" }

    func fold(_ side: SQLExpression, _ options: StringOptions, bind: (Value) -> String) -> String {
        "modeld_fold(\(side.sql), \(options.rawValue))"
    }

    func match(
        _ op: ComparisonOperator, _ lhs: SQLExpression, _ rhs: SQLExpression, options: StringOptions,
        bind: (Value) -> String
    ) -> String {
        let function =
            switch op {
            case .contains: "modeld_contains"
            case .beginsWith: "modeld_beginswith"
            case .endsWith: "modeld_endswith"
            default: "modeld_like"
            }
        return "\(function)(\(lhs.sql), \(rhs.sql), \(options.rawValue))"
    }

    func compareMixedDecimal(_ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression) -> String {
        let code: SQLiteFunctions.ComparisonCode =
            switch op {
            case .equal: .equal
            case .notEqual: .notEqual
            case .less: .less
            case .lessOrEqual: .lessOrEqual
            case .greater: .greater
            default: .greaterOrEqual
            }
        return "modeld_compare(\(lhs.sql), \(rhs.sql), \(code.rawValue))"
    }

    /// SQLite compares an INTEGER with a REAL exactly.
    var comparesIntsWithDoublesExactly: Bool { true }

    func compareIntWithDouble(_ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression) -> String {
        compareMixedDecimal(lhs, op, rhs)
    }

    var inlineListLimit: Int { 64 }

    /// SQLite prepares a statement in time that grows with the square of its constants (each new
    /// one is compared with every one before it, to be computed once: `sqlite3ExprCodeRunJustOnce`),
    /// about 7 ns times their number squared here: a predicate of 16,000 comparisons took 1.8 s to
    /// prepare, and a megabyte of them would take half a minute on the thread that prepares it.
    /// At 4,096 values, about 0.1 s. A long list is one value (``longList(_:bind:)``).
    var maximumConditionValues: Int? { 4_096 }

    /// JSON arrays read by `json_each`, one per storage class, so each element keeps its class.
    func longList(_ values: [Value], bind: (Value) -> String) -> String {
        var integers: [String] = [], doubles: [String] = [], texts: [String] = [], blobs: [String] = []
        for value in values {
            switch value {
            case .int(let v): integers.append(String(v))
            case .bool(let v): integers.append(v ? "1" : "0")
            case .date(let v): integers.append(String(v.microsecondsSince1970))
            case .double(let v): doubles.append("\"\(v.bitPattern)\"")
            case .data(let v): blobs.append("\"" + v.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "\"")
            default: texts.append(JSONText.string(value.textForm ?? ""))
            }
        }
        var selects: [String] = []
        for (elements, decode) in [
            (integers, "value"), (doubles, "modeld_f64(value)"), (texts, "value"), (blobs, "modeld_unhex(value)"),
        ]
        where !elements.isEmpty {
            selects.append(
                "SELECT \(decode) FROM json_each(\(bind(.string("[" + elements.joined(separator: ",") + "]"))))")
        }
        return "(" + selects.joined(separator: " UNION ALL ") + ")"
    }

    func sum(_ column: String, _ type: AttributeType) -> String {
        "modeld_sum(\(column), \(SQLiteFunctions.typeCode(type)))"
    }

    func average(_ column: String, _ type: AttributeType) -> String {
        "modeld_avg(\(column), \(SQLiteFunctions.typeCode(type)))"
    }

    func extreme(_ function: String, _ column: String, _ type: AttributeType) -> String {
        "\(function)(\(column)\(type == .decimal ? decimalOrder : ""))"
    }

    func dateAdd(_ date: String, _ seconds: String, sign: Int) -> String {
        "modeld_date_add(\(date), \(seconds), \(sign))"
    }

    func dateDifference(_ a: String, _ b: String) -> String {
        "((\(a) - \(b)) / 1000000.0)"
    }

    func divide(_ a: String, _ b: String) -> String {
        "(CAST(\(a) AS REAL) / \(b))"
    }

    func arithmetic(_ op: ArithmeticOperator, _ a: String, _ b: String, integers: Bool) -> String {
        "(\(a) \(op.rawValue) \(b))"
    }
}

extension SQLCompiler {
    /// A compiler of SQLite statements about `entity`.
    init(layout: SQLiteLayout, entity: ResolvedEntity, temporaryKeys: [UUID: Int64] = [:]) {
        self.init(layout: layout, dialect: SQLiteDialect.shared, entity: entity, temporaryKeys: temporaryKeys)
    }

    /// The statement a grouped count runs when it counts in a hash table (``HashAggregate``): it
    /// gives `modeld_group_count` (``GroupCounter``) the group keys, then per aggregation its key
    /// path (or 1 for `count(*)`; nothing at all when every aggregation is one), for every object
    /// the filter admits. With `keyRange`, only
    /// the objects whose key lies between the two parameters after ``parameters`` (`?N+1` and
    /// `?N+2`, bound per run) are counted: a part of the table, as ``ParallelGroupScan`` splits it.
    mutating func groupScan(_ descriptor: AggregateDescriptor, keyRange: Bool = false) throws(ModelError) -> String {
        let table = layout.table(for: root.entity)
        let condition = try filter(
            descriptor.predicate, includesSubentities: descriptor.includesSubentities, table: table)
        var arguments: [String] = []
        for path in descriptor.groupBy { arguments.append(try expression(.keyPath(path)).sql) }
        // When every aggregation is count(*), the counters take no argument (see
        // ``GroupTable/argumentCount``); otherwise count(*) counts a value that is never NULL.
        if !descriptor.countsEveryRow {
            for aggregation in descriptor.aggregations {
                if let path = aggregation.keyPath {
                    arguments.append(try expression(.keyPath(path)).sql)
                } else {
                    arguments.append("1")
                }
            }
        }
        let scan =
            "SELECT \(GroupCounter.functionName)(\(arguments.joined(separator: ", "))) FROM \(table.quoted) AS t0\(root.joinClause)"
        guard keyRange else { return scan + " WHERE \(condition)" }
        return scan
            + " WHERE (\(condition)) AND t0.\"_pk\" BETWEEN ?\(parameters.count + 1) AND ?\(parameters.count + 2)"
    }

}
