import ModelCore

extension SQLCompiler {
    /// Compiles a typed predicate to an SQL condition with two-valued logic: a comparison with
    /// NULL is false, so a negation is written `(p) IS NOT TRUE` (true for false and for NULL),
    /// and a double negation cancels. Nesting is kept shallow: SQLite's parser has a small
    /// stack.
    mutating func predicate(_ predicate: Predicate) throws(ModelError) -> String {
        switch predicate {
        case .constant(let value):
            return value ? "1" : "0"
        case .and(let parts):
            guard !parts.isEmpty else { return "1" }
            var terms: [String] = []
            for part in parts { terms.append(try self.predicate(part)) }
            return "(" + terms.joined(separator: " AND ") + ")"
        case .or(let parts):
            guard !parts.isEmpty else { return "0" }
            var terms: [String] = []
            for part in parts { terms.append(try self.predicate(part)) }
            return "(" + terms.joined(separator: " OR ") + ")"
        case .not(.not(let inner)):
            return try self.predicate(inner)
        case .not(let inner):
            return "(\(try self.predicate(inner)) IS NOT TRUE)"
        case .comparison(let comparison):
            return try self.comparison(comparison)
        }
    }

    /// A comparison; with `ANY`/`ALL`/`NONE`, an `EXISTS`/`NOT EXISTS` subquery over the
    /// related objects of the key path's to-many relationship.
    private mutating func comparison(_ c: Comparison) throws(ModelError) -> String {
        guard c.modifier != .direct else {
            return try compare(try expression(c.lhs), c.op, c.rhs, options: c.options)
        }
        guard case .keyPath(let path) = c.lhs else {
            throw ModelError(
                .invalidPredicate, "\(c.modifier.rawValue) needs a key path through a to-many relationship")
        }
        let resolved = try resolve(path)
        guard let index = resolved.toManyIndex else {
            throw ModelError(
                .invalidPredicate,
                "\(c.modifier.rawValue) needs a key path through a to-many relationship, but '\(path)' has none")
        }
        let relationships = resolved.relationships
        let scope = try scope(of: path)
        let owner = join(relationships[..<index], from: scope.alias, in: scope)
        let rows = relatedRows(relationships[index], of: owner)
        let related = SQLScope(alias: rows.alias, entity: try schema.entity(relationships[index].destination))
        let lhs = value(of: relationships[(index + 1)...], attribute: resolved.attribute, from: rows.alias, in: related)
        let test = try compare(lhs, c.op, c.rhs, options: c.options)
        let from = "FROM \(rows.from)\(related.joinClause) WHERE \(rows.condition)"
        switch c.modifier {
        case .any, .direct: return "EXISTS (SELECT 1 \(from) AND (\(test)))"
        case .all: return "NOT EXISTS (SELECT 1 \(from) AND NOT COALESCE((\(test)), 0))"
        case .none: return "NOT EXISTS (SELECT 1 \(from) AND (\(test)))"
        }
    }

    /// `lhs op rhs` for one (already compiled) left side.
    private mutating func compare(
        _ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: Expression,
        options: StringOptions
    ) throws(ModelError) -> String {
        switch op {
        case .in:
            guard case .list(let items) = rhs else {
                throw ModelError(.invalidPredicate, "IN needs a list on its right, such as {1, 2, 3}")
            }
            return try membership(lhs, items, options: options)
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw ModelError(.invalidPredicate, "BETWEEN needs exactly two bounds, {low, high}")
            }
            let low = try expression(bounds[0]), high = try expression(bounds[1])
            if options.isEmpty, !isMixedDecimal(lhs, low), !isMixedDecimal(lhs, high), low.kind != .null,
                high.kind != .null
            {
                return "(\(lhs.sql)\(collation(lhs)) BETWEEN \(low.sql) AND \(high.sql))"
            }
            return
                "(\(binary(lhs, .greaterOrEqual, low, options: options)) AND \(binary(lhs, .lessOrEqual, high, options: options)))"
        default:
            return binary(lhs, op, try expression(rhs), options: options)
        }
    }

    /// One comparison of two compiled sides, as the semantics page defines it.
    private func binary(
        _ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression,
        options: StringOptions
    ) -> String {
        if lhs.kind == .null || rhs.kind == .null {
            if lhs.kind == .null, rhs.kind == .null { return op == .equal ? "1" : "0" }
            let other = lhs.kind == .null ? rhs : lhs
            switch op {
            case .equal: return "(\(other.sql) IS NULL)"
            case .notEqual: return "(\(other.sql) IS NOT NULL)"
            default: return "0"
            }
        }
        let optionsArgument = options.rawValue
        switch op {
        case .contains: return "modeld_contains(\(lhs.sql), \(rhs.sql), \(optionsArgument))"
        case .beginsWith: return "modeld_beginswith(\(lhs.sql), \(rhs.sql), \(optionsArgument))"
        case .endsWith: return "modeld_endswith(\(lhs.sql), \(rhs.sql), \(optionsArgument))"
        case .like: return "modeld_like(\(lhs.sql), \(rhs.sql), \(optionsArgument))"
        default: break
        }
        if isMixedDecimal(lhs, rhs) {
            return "modeld_compare(\(lhs.sql), \(rhs.sql), \(comparisonCode(op).rawValue))"
        }
        let l = folded(lhs, options), r = folded(rhs, options) + collation(lhs, rhs)
        switch op {
        case .equal where lhs.literal != nil || rhs.literal != nil: return "(\(l) = \(r))"
        case .equal: return "(\(l) IS \(r))"
        case .notEqual: return "(\(l) IS NOT \(r))"
        case .less: return "(\(l) < \(r))"
        case .lessOrEqual: return "(\(l) <= \(r))"
        case .greater: return "(\(l) > \(r))"
        default: return "(\(l) >= \(r))"
        }
    }

    /// `lhs IN {…}`: equal to some element; nil matches a nil element; an empty list is false.
    /// Literal lists are bound one parameter per element, or, when long, as JSON arrays read by
    /// `json_each` (SQLite takes at most 32766 parameters).
    private mutating func membership(
        _ lhs: SQLExpression, _ items: [Expression],
        options: StringOptions
    ) throws(ModelError) -> String {
        var literals: [Value] = []
        var hasNil = false
        var computed = false
        for item in items {
            switch item {
            case .literal(.null): hasNil = true
            case .literal(let value): literals.append(value)
            case .object(let id): literals.append(.int(primaryKey(of: id)))
            default: computed = true
            }
        }
        let probe = SQLExpression(sql: "", kind: lhs.kind)
        if computed
            || literals.contains(where: { isMixedDecimal(probe, SQLExpression(sql: "", kind: .value($0.type ?? .int))) }
            )
        {
            var tests: [String] = []
            for item in items { tests.append(binary(lhs, .equal, try expression(item), options: options)) }
            return tests.isEmpty ? "0" : "(" + tests.joined(separator: " OR ") + ")"
        }
        var tested = lhs.sql
        if !options.isEmpty, lhs.type == .string {
            tested = "modeld_fold(\(lhs.sql), \(options.rawValue))"
            literals = literals.map { value in
                if case .string(let text) = value { return .string(TextComparison.fold(text, options: options)) }
                return value
            }
        }
        var tests: [String] = []
        if !literals.isEmpty { tests.append("\(tested)\(collation(lhs)) IN \(list(literals))") }
        if hasNil { tests.append("\(lhs.sql) IS NULL") }
        return tests.isEmpty ? "0" : "(" + tests.joined(separator: " OR ") + ")"
    }

    /// The most elements bound one parameter each; longer lists go through `json_each`.
    static let inlineListLimit = 64

    private mutating func list(_ values: [Value]) -> String {
        if values.count <= Self.inlineListLimit {
            return "(" + values.map { bind($0) }.joined(separator: ", ") + ")"
        }
        // Group by how SQL reads the element back from JSON, so each keeps its storage class.
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

    /// Whether one side is a decimal and the other another number: such pairs compare through
    /// `modeld_compare`, by ``Value/compare(_:_:)``.
    private func isMixedDecimal(_ a: SQLExpression, _ b: SQLExpression) -> Bool {
        guard let x = a.type, let y = b.type, x.isNumeric, y.isNumeric else { return false }
        return (x == .decimal) != (y == .decimal)
    }

    /// ` COLLATE modeld_decimal` when decimals are compared, so text compares by value wherever
    /// it comes from (a column, an aggregate, a parameter).
    private func collation(_ sides: SQLExpression...) -> String {
        sides.contains { $0.type == .decimal } ? " COLLATE \(SQLiteFunctions.decimalCollation)" : ""
    }

    /// The side folded with `[c]`/`[d]` when it is a string and options are given.
    private func folded(_ side: SQLExpression, _ options: StringOptions) -> String {
        guard !options.isEmpty, side.type == .string else { return side.sql }
        return "modeld_fold(\(side.sql), \(options.rawValue))"
    }

    private func comparisonCode(_ op: ComparisonOperator) -> SQLiteFunctions.ComparisonCode {
        switch op {
        case .equal: .equal
        case .notEqual: .notEqual
        case .less: .less
        case .lessOrEqual: .lessOrEqual
        case .greater: .greater
        default: .greaterOrEqual
        }
    }
}

/// JSON text for SQLite's `json_each`.
enum JSONText {
    /// A JSON string literal: quotes, backslashes and control characters escaped.
    static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 {
                    out += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension String {
    /// The string with zeros in front up to `width` characters.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
