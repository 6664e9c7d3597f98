import ModelCore

/// A compiled expression: SQL text and what it evaluates to.
struct SQLExpression {
    enum Kind: Equatable {
        /// A value of an attribute type.
        case value(AttributeType)
        /// An object's primary key.
        case object
        /// The nil literal.
        case null
    }

    var sql: String
    var kind: Kind
    /// The value, when the expression is a bound literal.
    var literal: Value?

    /// The attribute type, for a value.
    var type: AttributeType? {
        if case .value(let type) = kind { return type }
        return nil
    }
}

extension SQLCompiler {
    /// Compiles an expression (anything but a `{…}` list, which only `IN` and `BETWEEN` take).
    mutating func expression(_ node: Expression) throws(ModelError) -> SQLExpression {
        switch node {
        case .literal(let value):
            guard let type = value.type else { return SQLExpression(sql: "NULL", kind: .null) }
            return SQLExpression(sql: bind(value), kind: .value(type), literal: value)
        case .object(let id):
            let key = Value.int(primaryKey(of: id))
            return SQLExpression(sql: bind(key), kind: .object, literal: key)
        case .list:
            throw ModelError(.invalidPredicate, "a {…} list belongs on the right of IN or BETWEEN only")
        case .keyPath(let path):
            let resolved = try resolve(path)
            guard resolved.toManyIndex == nil else {
                throw ModelError(
                    .invalidPredicate, "'\(path)' crosses a to-many relationship: say ANY, ALL or NONE, or use @count",
                    context: ["keyPath": path.description])
            }
            let scope = try scope(of: path)
            return value(of: resolved.relationships[...], attribute: resolved.attribute, from: scope.alias, in: scope)
        case .entityName(let variable):
            let alias = variable == nil ? root.alias : try scope(of: PropertyPath([], variable: variable)).alias
            return SQLExpression(sql: "\(alias).\"_entity\"", kind: .value(.string))
        case .collection(let function, let path, let attributeName):
            return try collection(function, path, attributeName)
        case .subqueryCount(let collection, let variable, let inner):
            let resolved = try resolve(collection)
            guard resolved.endsAtToMany, let last = resolved.relationships.last else {
                throw ModelError(
                    .invalidPredicate, "SUBQUERY needs a to-many relationship, and '\(collection)' is not one")
            }
            let scope = try scope(of: collection)
            let owner = join(resolved.relationships.dropLast(), from: scope.alias, in: scope)
            let rows = relatedRows(last, of: owner)
            let variableScope = SQLScope(alias: rows.alias, entity: resolved.end)
            let outer = variables[variable]
            variables[variable] = variableScope
            defer { variables[variable] = outer }
            let condition = try predicate(inner)
            return SQLExpression(
                sql:
                    "(SELECT count(*) FROM \(rows.from)\(variableScope.joinClause) WHERE \(rows.condition) AND (\(condition)))",
                kind: .value(.int))
        case .arithmetic(let op, let a, let b):
            return try arithmetic(op, expression(a), expression(b))
        }
    }

    /// The value at the end of to-one `relationships` from `alias`: an attribute, or the key of
    /// the object reached (`alias` itself when there are no relationships).
    mutating func value(
        of relationships: ArraySlice<ResolvedRelationship>, attribute: AttributeDescription?,
        from alias: String, in scope: SQLScope
    ) -> SQLExpression {
        if let attribute {
            let end = join(relationships, from: alias, in: scope)
            return SQLExpression(sql: SQL.column(end, attribute.name), kind: .value(attribute.type))
        }
        guard let last = relationships.last else { return SQLExpression(sql: "\(alias).\"_pk\"", kind: .object) }
        let owner = join(relationships.dropLast(), from: alias, in: scope)
        return SQLExpression(sql: objectKey(of: last, from: owner), kind: .object)
    }

    /// `items.@count`, `items.@sum.price`…: a correlated subquery over the related objects.
    /// `@sum` of none is 0 of the attribute's type; `@avg`, `@min`, `@max` of none are NULL.
    private mutating func collection(
        _ function: CollectionFunction, _ path: PropertyPath,
        _ attributeName: String?
    ) throws(ModelError) -> SQLExpression {
        let resolved = try resolve(path)
        guard resolved.endsAtToMany, let last = resolved.relationships.last else {
            throw ModelError(
                .invalidPredicate, "\(function.rawValue) applies to a to-many relationship, and '\(path)' is not one")
        }
        let scope = try scope(of: path)
        let owner = join(resolved.relationships.dropLast(), from: scope.alias, in: scope)
        let rows = relatedRows(last, of: owner)
        if function == .count { return SQLExpression(sql: rows.countSQL, kind: .value(.int)) }
        guard let attributeName, let attribute = resolved.end.attribute(attributeName) else {
            throw ModelError(.invalidPredicate, "\(function.rawValue) needs an attribute of '\(resolved.end.name)'")
        }
        let column = SQL.column(rows.alias, attribute.name)
        let from = "FROM \(rows.from) WHERE \(rows.condition)"
        let code = SQLiteFunctions.typeCode(attribute.type)
        switch function {
        case .sum:
            let zero = attribute.type == .decimal ? "'0'" : (attribute.type == .int ? "0" : "0.0")
            return SQLExpression(
                sql: "COALESCE((SELECT modeld_sum(\(column), \(code)) \(from)), \(zero))", kind: .value(attribute.type))
        case .avg:
            return SQLExpression(
                sql: "(SELECT modeld_avg(\(column), \(code)) \(from))",
                kind: .value(attribute.type == .decimal ? .decimal : .double))
        case .min, .max:
            return SQLExpression(
                sql: "(SELECT \(function == .min ? "min" : "max")(\(column)) \(from))", kind: .value(attribute.type))
        case .count:
            return SQLExpression(sql: rows.countSQL, kind: .value(.int))
        }
    }

    /// Arithmetic as the semantics page defines it: SQLite's integer arithmetic (overflow turns
    /// into a double), `/` always in doubles (division by zero is NULL), date ± seconds through
    /// `modeld_date_add`, date − date in seconds.
    private func arithmetic(_ op: ArithmeticOperator, _ a: SQLExpression, _ b: SQLExpression) throws(ModelError)
        -> SQLExpression
    {
        guard let x = a.type, let y = b.type else {
            throw ModelError(.typeMismatch, "arithmetic needs numbers or dates, not nil or objects")
        }
        switch (x, y, op) {
        case (.date, .int, .add), (.date, .double, .add), (.date, .int, .subtract), (.date, .double, .subtract):
            return SQLExpression(
                sql: "modeld_date_add(\(a.sql), \(b.sql), \(op == .add ? 1 : -1))", kind: .value(.date))
        case (.int, .date, .add), (.double, .date, .add):
            return SQLExpression(sql: "modeld_date_add(\(b.sql), \(a.sql), 1)", kind: .value(.date))
        case (.date, .date, .subtract):
            return SQLExpression(sql: "((\(a.sql) - \(b.sql)) / 1000000.0)", kind: .value(.double))
        case (.int, .int, _), (.int, .double, _), (.double, .int, _), (.double, .double, _):
            if op == .divide { return SQLExpression(sql: "(CAST(\(a.sql) AS REAL) / \(b.sql))", kind: .value(.double)) }
            let type: AttributeType = x == .int && y == .int ? .int : .double
            return SQLExpression(sql: "(\(a.sql) \(op.rawValue) \(b.sql))", kind: .value(type))
        default:
            throw ModelError(
                .typeMismatch,
                "cannot compute \(x.rawValue) \(op.rawValue) \(y.rawValue); arithmetic works on int, double and date (plus or minus seconds)"
            )
        }
    }
}
