import Foundation
import ModelCore
import ModelStorage

/// PostgreSQL's SQL for ``SQLCompiler``, with modeld's semantics where PostgreSQL's own differ:
/// strings fold by reading the folded forms the save keeps beside each string attribute
/// (``PostgresLayout/foldedColumn(_:_:)``); sums of doubles are exact, as on the other backends
/// (``PostgresFunctions``' `modeld_fsum`); double arithmetic overflows to an infinity rather
/// than failing, and NaN (of arithmetic, sums and averages) is NULL, as in SQLite; ints are
/// summed and computed in `numeric`, so that nothing overflows.
struct PostgresDialect: SQLDialect {
    static let shared = PostgresDialect()

    /// `$N` cast to the type the value is bound as (``PostgresValues/bind(_:into:)``), which is
    /// the type PostgresNIO declares for it: the cast changes nothing of a statement's meaning,
    /// but a statement prepared without declared types (``PreparedStatements``) then takes the
    /// same. NULL, bound untyped, is left to PostgreSQL to infer.
    func placeholder(_ index: Int, for value: Value) -> String {
        guard let type = PostgresValues.boundType(value) else { return "$\(index)" }
        return "$\(index)::\(type)"
    }

    func constant(_ value: Bool) -> String { value ? "TRUE" : "FALSE" }

    func order(ascending: Bool) -> String { ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST" }

    var unlimited: String { "ALL" }
    var readsEntityOfOneEntityTable: Bool { true }

    func same(_ a: String, _ b: String, negated: Bool) -> String {
        "(\(a) IS \(negated ? "" : "NOT ")DISTINCT FROM \(b))"
    }

    var decimalOrder: String { "" }

    func fold(_ side: SQLExpression, _ options: StringOptions, bind: (Value) -> String) throws(ModelError) -> String {
        if case .string(let text)? = side.literal {
            return bind(.string(TextComparison.fold(text, options: options)))
        }
        switch side.origin {
        case .column(let alias, let name)?:
            return SQL.column(alias, PostgresLayout.foldedColumn(name, options))
        case .extreme(let ascending, let from, let alias, let name)?:
            return
                "(SELECT \(SQL.column(alias, PostgresLayout.foldedColumn(name, options))) \(from) AND \(SQL.column(alias, name)) IS NOT NULL ORDER BY \(SQL.column(alias, name)) \(ascending ? "ASC" : "DESC") LIMIT 1)"
        case .entityName?:
            // Entity names are identifiers: ASCII, which lower() in the "C" collation folds.
            return options.contains(.caseInsensitive) ? "lower(\(side.sql))" : side.sql
        case nil:
            throw ModelError(
                .invalidPredicate, "this string expression cannot be compared with [c] or [d] options on PostgreSQL")
        }
    }

    func match(
        _ op: ComparisonOperator, _ lhs: SQLExpression, _ rhs: SQLExpression, options: StringOptions,
        bind: (Value) -> String
    ) throws(ModelError) -> String {
        let l = options.isEmpty ? lhs.sql : try fold(lhs, options, bind: bind)
        switch op {
        case .like:
            if case .string(let pattern)? = rhs.literal {
                return "(\(l) LIKE \(bind(.string(Self.likePattern(TextComparison.fold(pattern, options: options))))))"
            }
            let r = options.isEmpty ? rhs.sql : try fold(rhs, options, bind: bind)
            return "(\(l) LIKE modeld_like_pattern(\(r)))"
        default:
            let r = options.isEmpty ? rhs.sql : try fold(rhs, options, bind: bind)
            switch op {
            case .contains: return "(strpos(\(l), \(r)) > 0)"
            case .beginsWith: return "starts_with(\(l), \(r))"
            default: return "(right(\(l), char_length(\(r))) = \(r))"
            }
        }
    }

    /// A modeld `LIKE` pattern (`*`, `?`, `\` escaping the next character) as PostgreSQL's
    /// (`%`, `_`, `\` escaping): the same as the store's `modeld_like_pattern`.
    static func likePattern(_ pattern: String) -> String {
        let scalars = Array(pattern.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        func literal(_ scalar: Unicode.Scalar) {
            if scalar == "%" || scalar == "_" || scalar == "\\" { out.append("\\") }
            out.append(scalar)
        }
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\\", index + 1 < scalars.count {
                literal(scalars[index + 1])
                index += 2
                continue
            }
            switch scalar {
            case "*": out.append("%")
            case "?": out.append("_")
            default: literal(scalar)
            }
            index += 1
        }
        return String(out)
    }

    func compareMixedDecimal(_ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression) -> String {
        Self.twoValued(
            "((\(lhs.sql))::numeric \(Self.symbol(op)) (\(rhs.sql))::numeric)", op, lhs.sql, rhs.sql)
    }

    var comparesIntsWithDoublesExactly: Bool { false }

    func compareIntWithDouble(_ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression) -> String {
        let order =
            lhs.type == .int
            ? "modeld_compare_number(\(lhs.sql), \(rhs.sql))" : "(-modeld_compare_number(\(rhs.sql), \(lhs.sql)))"
        return Self.twoValued("(\(order) \(Self.symbol(op)) 0)", op, lhs.sql, rhs.sql)
    }

    private static func symbol(_ op: ComparisonOperator) -> String {
        switch op {
        case .equal: "="
        case .notEqual: "<>"
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        default: ">="
        }
    }

    /// `test` (NULL when a side is nil) with modeld's nil rules: `==` true when both sides are
    /// nil, `!=` when exactly one is; any other comparison with nil stays NULL, which is false.
    private static func twoValued(_ test: String, _ op: ComparisonOperator, _ l: String, _ r: String) -> String {
        switch op {
        case .equal: "COALESCE(\(test), (\(l)) IS NULL AND (\(r)) IS NULL)"
        case .notEqual: "COALESCE(\(test), ((\(l)) IS NULL) <> ((\(r)) IS NULL))"
        default: test
        }
    }

    var inlineListLimit: Int { 64 }

    /// SQLite's limit (``SQLiteDialect``), so that a predicate one SQL store runs, the other runs
    /// too (PostgreSQL itself refuses more than 65,535 parameters).
    var maximumConditionValues: Int? { 4_096 }

    /// JSON arrays of the elements' text, one per type, cast back.
    func longList(_ values: [Value], bind: (Value) -> String) -> String {
        var groups: [String: [String]] = [:]
        var order: [String] = []
        func add(_ text: String, _ decode: String) {
            if groups[decode] == nil { order.append(decode) }
            groups[decode, default: []].append(JSONText.string(text))
        }
        for value in values {
            switch value {
            case .int(let v): add(String(v), "v::bigint")
            case .bool(let v): add(v ? "true" : "false", "v::boolean")
            case .date(let v): add(String(v.microsecondsSince1970), "v::bigint")
            case .double(let v): add("\(v)", "v::float8")
            case .decimal(let v): add("\(v)", "v::numeric")
            case .uuid(let v): add(v.uuidString, "v::uuid")
            case .data(let v): add(v.map { String(format: "%02x", $0) }.joined(), "decode(v, 'hex')")
            default: add(value.textForm ?? "", "v")
            }
        }
        let selects = order.map { decode in
            "SELECT \(decode) FROM jsonb_array_elements_text(\(bind(.string("[" + groups[decode, default: []].joined(separator: ",") + "]")))::jsonb) AS e(v)"
        }
        return "(" + selects.joined(separator: " UNION ALL ") + ")"
    }

    /// A NaN sum of doubles (an infinity of each sign) is NULL, as in SQLite (PostgreSQL's NaN
    /// equals itself and sorts above every number).
    func sum(_ column: String, _ type: AttributeType) -> String {
        type == .double ? "NULLIF(modeld_fsum(\(column)), 'NaN'::float8)" : "sum(\(column))"
    }

    func average(_ column: String, _ type: AttributeType) -> String {
        switch type {
        case .int: "(sum(\(column))::float8 / NULLIF(count(\(column)), 0))"
        case .decimal: "modeld_decimal_quotient(sum(\(column)), count(\(column)))"
        // Through modeld_arith: PostgreSQL's own `/` fails when the quotient underflows.
        default: "modeld_arith('/', modeld_fsum(\(column)), count(\(column))::float8)"
        }
    }

    func extreme(_ function: String, _ column: String, _ type: AttributeType) -> String {
        switch type {
        case .bool: "\(function == "min" ? "bool_and" : "bool_or")(\(column))"
        case .uuid: "(\(function)((\(column))::text COLLATE \"C\"))::uuid"
        case .data: "decode(\(function)(encode(\(column), 'hex') COLLATE \"C\"), 'hex')"
        default: "\(function)(\(column))"
        }
    }

    func dateAdd(_ date: String, _ seconds: String, sign: Int) -> String {
        "modeld_date_add((\(date))::bigint, (\(seconds))::float8, \(sign))"
    }

    func dateDifference(_ a: String, _ b: String) -> String {
        "(((\(a))::numeric - (\(b)))::float8 / 1000000.0::float8)"
    }

    func divide(_ a: String, _ b: String) -> String {
        "modeld_arith('/', (\(a))::float8, (\(b))::float8)"
    }

    func arithmetic(_ op: ArithmeticOperator, _ a: String, _ b: String, integers: Bool) -> String {
        integers
            ? "((\(a))::numeric \(op.rawValue) (\(b))::numeric)"
            : "modeld_arith('\(op.rawValue)', (\(a))::float8, (\(b))::float8)"
    }
}
