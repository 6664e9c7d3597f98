import ModelCore

extension SQLCompiler {
    /// Compiles a typed predicate to an SQL condition with two-valued logic: a comparison with
    /// NULL is false, so a negation is written `(p) IS NOT TRUE` (true for false and for NULL),
    /// and a double negation cancels. Nesting is kept shallow: SQLite's parser has a small
    /// stack.
    package mutating func predicate(_ predicate: Predicate) throws(ModelError) -> String {
        switch predicate {
        case .constant(let value):
            return dialect.constant(value)
        case .and(let parts):
            guard !parts.isEmpty else { return dialect.constant(true) }
            var terms: [String] = []
            for part in parts { terms.append(try self.predicate(part)) }
            return Self.junction(terms, "AND")
        case .or(let parts):
            guard !parts.isEmpty else { return dialect.constant(false) }
            var terms: [String] = []
            for part in parts { terms.append(try self.predicate(part)) }
            return Self.junction(terms, "OR")
        case .not(.not(let inner)):
            return try self.predicate(inner)
        case .not(let inner):
            return "(\(try self.predicate(inner)) IS NOT TRUE)"
        case .comparison(let comparison):
            return try self.comparison(comparison)
        }
    }

    /// The most terms of a junction written in one group of parentheses.
    static let junctionWidth = 64

    /// `terms` joined by `op` (`AND`, `OR`) in parentheses, in groups of at most
    /// ``junctionWidth``, grouped again until one is left: SQLite parses a chain of n terms as a
    /// tree n deep and refuses one deeper than 1,000 (`SQLITE_MAX_EXPR_DEPTH`), so a flat `AND`
    /// of 998 comparisons, well within the predicate's limits, did not compile; grouped, 100,000
    /// terms are three groups deep. Both SQLite's planner and PostgreSQL's flatten the groups
    /// again (`sqlite3WhereSplit` splits nested ANDs and ORs alike).
    static func junction(_ terms: [String], _ op: String) -> String {
        precondition(!terms.isEmpty, "a junction of no terms")
        var level = terms
        repeat {
            level = stride(from: 0, to: level.count, by: junctionWidth).map { start in
                "(" + level[start..<min(start + junctionWidth, level.count)].joined(separator: " \(op) ") + ")"
            }
        } while level.count > 1
        return level[0]
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
        case .all: return "NOT EXISTS (SELECT 1 \(from) AND NOT COALESCE((\(test)), \(dialect.constant(false))))"
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
            if options.isEmpty, !needsOwnComparison(lhs, low), !needsOwnComparison(lhs, high), low.kind != .null,
                high.kind != .null
            {
                return "(\(lhs.sql)\(collation(lhs)) BETWEEN \(low.sql) AND \(high.sql))"
            }
            let lower = try binary(lhs, .greaterOrEqual, low, options: options)
            return "(\(lower) AND \(try binary(lhs, .lessOrEqual, high, options: options)))"
        default:
            return try binary(lhs, op, try expression(rhs), options: options)
        }
    }

    /// One comparison of two compiled sides, as the semantics page defines it.
    private mutating func binary(
        _ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression,
        options: StringOptions
    ) throws(ModelError) -> String {
        if lhs.kind == .null || rhs.kind == .null {
            if lhs.kind == .null, rhs.kind == .null { return dialect.constant(op == .equal) }
            let other = lhs.kind == .null ? rhs : lhs
            switch op {
            case .equal: return "(\(other.sql) IS NULL)"
            case .notEqual: return "(\(other.sql) IS NOT NULL)"
            default: return dialect.constant(false)
            }
        }
        switch op {
        case .contains, .beginsWith, .endsWith, .like:
            let dialect = dialect
            return try dialect.match(op, lhs, rhs, options: options) { bind($0) }
        default: break
        }
        if isMixedDecimal(lhs, rhs) { return dialect.compareMixedDecimal(lhs, op, rhs) }
        if isInexactIntDouble(lhs, rhs) { return dialect.compareIntWithDouble(lhs, op, rhs) }
        let l = try folded(lhs, options), r = try folded(rhs, options) + collation(lhs, rhs)
        switch op {
        case .equal where lhs.literal != nil || rhs.literal != nil: return "(\(l) = \(r))"
        case .equal: return dialect.same(l, r, negated: false)
        case .notEqual: return dialect.same(l, r, negated: true)
        case .less: return "(\(l) < \(r))"
        case .lessOrEqual: return "(\(l) <= \(r))"
        case .greater: return "(\(l) > \(r))"
        default: return "(\(l) >= \(r))"
        }
    }

    /// `lhs IN {…}`: equal to some element; nil matches a nil element; an empty list is false.
    /// Literal lists are bound one parameter per element, or, when long, as the dialect says
    /// (SQLite takes at most 32766 parameters, PostgreSQL 65535).
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
            || literals.contains(where: {
                needsOwnComparison(probe, SQLExpression(sql: "", kind: .value($0.type ?? .int)))
            })
        {
            var tests: [String] = []
            for item in items { tests.append(try binary(lhs, .equal, try expression(item), options: options)) }
            return tests.isEmpty ? dialect.constant(false) : Self.junction(tests, "OR")
        }
        var tested = lhs.sql
        if !options.isEmpty, lhs.type == .string {
            tested = try folded(lhs, options)
            literals = literals.map { value in
                if case .string(let text) = value { return .string(TextComparison.fold(text, options: options)) }
                return value
            }
        }
        var tests: [String] = []
        if !literals.isEmpty { tests.append("\(tested)\(collation(lhs)) IN \(list(literals))") }
        if hasNil { tests.append("\(lhs.sql) IS NULL") }
        return tests.isEmpty ? dialect.constant(false) : Self.junction(tests, "OR")
    }

    private mutating func list(_ values: [Value]) -> String {
        if values.count <= dialect.inlineListLimit {
            return "(" + values.map { bind($0) }.joined(separator: ", ") + ")"
        }
        let dialect = dialect
        return dialect.longList(values) { bind($0) }
    }

    /// Whether one side is a decimal and the other another number: such pairs compare as
    /// ``Value/compare(_:_:)`` does (``SQLDialect/compareMixedDecimal(_:_:_:)``).
    private func isMixedDecimal(_ a: SQLExpression, _ b: SQLExpression) -> Bool {
        guard let x = a.type, let y = b.type, x.isNumeric, y.isNumeric else { return false }
        return (x == .decimal) != (y == .decimal)
    }

    /// Whether one side is an int and the other a double, on a dialect whose SQL compares such
    /// pairs through a double (``SQLDialect/comparesIntsWithDoublesExactly``).
    private func isInexactIntDouble(_ a: SQLExpression, _ b: SQLExpression) -> Bool {
        guard !dialect.comparesIntsWithDoublesExactly, let x = a.type, let y = b.type else { return false }
        return (x == .int && y == .double) || (x == .double && y == .int)
    }

    /// Whether the pair is compared by the dialect's own function rather than SQL's operators.
    private func needsOwnComparison(_ a: SQLExpression, _ b: SQLExpression) -> Bool {
        isMixedDecimal(a, b) || isInexactIntDouble(a, b)
    }

    /// The dialect's ordering of decimals when decimals are compared, so they compare by value
    /// wherever they come from (a column, an aggregate, a parameter).
    private func collation(_ sides: SQLExpression...) -> String {
        sides.contains { $0.type == .decimal } ? dialect.decimalOrder : ""
    }

    /// The side folded with `[c]`/`[d]` when it is a string and options are given.
    private mutating func folded(_ side: SQLExpression, _ options: StringOptions) throws(ModelError) -> String {
        guard !options.isEmpty, side.type == .string else { return side.sql }
        let dialect = dialect
        return try dialect.fold(side, options) { bind($0) }
    }
}
