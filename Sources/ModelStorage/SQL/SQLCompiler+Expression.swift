import ModelCore

/// A compiled expression: SQL text and what it evaluates to.
package struct SQLExpression {
    package enum Kind: Equatable {
        /// A value of an attribute type.
        case value(AttributeType)
        /// An object's primary key.
        case object
        /// The nil literal.
        case null
    }

    /// Where a string's value comes from, for a dialect that folds strings by reading what the
    /// backend stored beside them rather than by calling a function.
    package enum Origin {
        /// The attribute `name` of the row `alias`.
        case column(alias: String, name: String)
        /// `@min`/`@max` of the attribute `name` of the rows `alias` of `from` (`FROM … WHERE …`).
        case extreme(ascending: Bool, from: String, alias: String, name: String)
        /// An entity name (`alias."_entity"`): ASCII.
        case entityName
    }

    package var sql: String
    package var kind: Kind
    /// The value, when the expression is a bound literal.
    package var literal: Value?
    /// Where a string comes from, when it is not a literal.
    package var origin: Origin?

    package init(sql: String, kind: Kind, literal: Value? = nil, origin: Origin? = nil) {
        self.sql = sql
        self.kind = kind
        self.literal = literal
        self.origin = origin
    }

    /// The attribute type, for a value.
    package var type: AttributeType? {
        if case .value(let type) = kind { return type }
        return nil
    }
}

extension SQLCompiler {
    /// Compiles an expression (anything but a `{…}` list, which only `IN` and `BETWEEN` take).
    package mutating func expression(_ node: Expression) throws(ModelError) -> SQLExpression {
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
            return SQLExpression(sql: "\(alias).\"_entity\"", kind: .value(.string), origin: .entityName)
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
            return SQLExpression(
                sql: SQL.column(end, attribute.name), kind: .value(attribute.type),
                origin: .column(alias: end, name: attribute.name))
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
        switch function {
        case .sum:
            let zero = bind(attribute.type == .decimal ? .decimal(0) : (attribute.type == .int ? .int(0) : .double(0)))
            return SQLExpression(
                sql: "COALESCE((SELECT \(dialect.sum(column, attribute.type)) \(from)), \(zero))",
                kind: .value(attribute.type))
        case .avg:
            return SQLExpression(
                sql: "(SELECT \(dialect.average(column, attribute.type)) \(from))",
                kind: .value(attribute.type == .decimal ? .decimal : .double))
        case .min, .max:
            let name = function == .min ? "min" : "max"
            return SQLExpression(
                sql: "(SELECT \(dialect.extreme(name, column, attribute.type)) \(from))", kind: .value(attribute.type),
                origin: .extreme(ascending: function == .min, from: from, alias: rows.alias, name: attribute.name))
        case .count:
            return SQLExpression(sql: rows.countSQL, kind: .value(.int))
        }
    }

    /// Arithmetic as the semantics page defines it: SQLite's integer arithmetic (overflow turns
    /// into a double), `/` always in doubles (division by zero is NULL), date ± seconds rounded to
    /// the microsecond, date − date in seconds.
    private func arithmetic(_ op: ArithmeticOperator, _ a: SQLExpression, _ b: SQLExpression) throws(ModelError)
        -> SQLExpression
    {
        guard let x = a.type, let y = b.type else {
            throw ModelError(.typeMismatch, "arithmetic needs numbers or dates, not nil or objects")
        }
        switch (x, y, op) {
        case (.date, .int, .add), (.date, .double, .add), (.date, .int, .subtract), (.date, .double, .subtract):
            return SQLExpression(
                sql: dialect.dateAdd(a.sql, b.sql, sign: op == .add ? 1 : -1), kind: .value(.date))
        case (.int, .date, .add), (.double, .date, .add):
            return SQLExpression(sql: dialect.dateAdd(b.sql, a.sql, sign: 1), kind: .value(.date))
        case (.date, .date, .subtract):
            return SQLExpression(sql: dialect.dateDifference(a.sql, b.sql), kind: .value(.double))
        case (.int, .int, _), (.int, .double, _), (.double, .int, _), (.double, .double, _):
            if op == .divide { return SQLExpression(sql: dialect.divide(a.sql, b.sql), kind: .value(.double)) }
            let integers = x == .int && y == .int
            return SQLExpression(
                sql: dialect.arithmetic(op, a.sql, b.sql, integers: integers), kind: .value(integers ? .int : .double))
        default:
            throw ModelError(
                .typeMismatch,
                "cannot compute \(x.rawValue) \(op.rawValue) \(y.rawValue); arithmetic works on int, double and date (plus or minus seconds)"
            )
        }
    }
}
