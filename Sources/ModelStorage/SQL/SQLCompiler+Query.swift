import ModelCore

extension SQLCompiler {
    /// `SELECT … FROM … WHERE … ORDER BY … LIMIT … OFFSET …` for a validated fetch. For objects
    /// the select list is `_pk`, `_entity` (or NULL, ``entityColumn``), `_version` and
    /// `columns`; for identifiers `_pk`, `_entity`; for a count, one `count(*)` after offset and
    /// limit. `select`, when given, is the select list of `columns` made beforehand
    /// (``plainObjectSelect(_:entity:)``), which a caller keeps for every fetch of the same columns.
    package mutating func fetch(_ descriptor: FetchDescriptor, columns: [SelectedColumn], select: String? = nil)
        throws(ModelError) -> String
    {
        let table = layout.table(for: root.entity)
        let condition = try filter(
            descriptor.predicate, includesSubentities: descriptor.includesSubentities, table: table)
        var order: [String] = []
        for sort in descriptor.sortBy {
            let sorted = try expression(.keyPath(sort.keyPath))
            var key = sorted.sql
            if sort.caseInsensitive, sorted.type == .string {
                let dialect = dialect
                key = try dialect.fold(sorted, .caseInsensitive) { bind($0) }
            }
            order.append(key + dialect.order(ascending: sort.ascending))
        }
        order.append("t0.\"_pk\" ASC")
        let paging = page(offset: descriptor.offset, limit: descriptor.limit)
        switch descriptor.resultType {
        case .count:
            if paging.isEmpty {
                return "SELECT count(*) FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition)"
            }
            return
                "SELECT count(*) FROM (SELECT t0.\"_pk\" FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition) ORDER BY \(order.joined(separator: ", "))\(paging)) AS c"
        case .identifiers:
            return
                "SELECT t0.\"_pk\", t0.\"_entity\" FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition) ORDER BY \(order.joined(separator: ", "))\(paging)"
        case .objects:
            let select = select ?? objectSelect(columns)
            return
                "SELECT \(select) FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition) ORDER BY \(order.joined(separator: ", "))\(paging)"
        }
    }

    /// `t0."_pk", t0."_entity", t0."_version", …` for `columns`, joining each foreign key's
    /// target for its entity name (`_entity` as ``entityColumn`` has it).
    package mutating func objectSelect(_ columns: [SelectedColumn]) -> String {
        let entity = entityColumn
        if let plain = Self.plainObjectSelect(columns, entity: entity) { return plain }
        var select = Self.objectKeyColumns(entity: entity)
        for column in columns {
            select.append(SQL.column("t0", column.name))
            if case .reference = column.kind, let relationship = relationship(named: column.name) {
                let target = alias("r")
                let table = layout.table(root: rootName(of: relationship.destination))
                root.joins.append(
                    "LEFT JOIN \(table.quoted) AS \(target) ON \(target).\"_pk\" = \(SQL.column("t0", column.name))")
                select.append("\(target).\"_entity\"")
            }
        }
        return select.joined(separator: ", ")
    }

    /// What an objects statement selects as its second column: the row's `_entity`, or NULL
    /// when the fetched entity's table holds that entity alone and the dialect's reader takes
    /// the entity from the table (``SQLDialect/readsEntityOfOneEntityTable``).
    package var entityColumn: String {
        Self.entityColumn(of: layout.table(for: root.entity), dialect: dialect)
    }

    /// ``entityColumn`` for a statement over `table` in `dialect`.
    package static func entityColumn(of table: TableLayout, dialect: any SQLDialect) -> String {
        table.entities.count == 1 && !dialect.readsEntityOfOneEntityTable ? "NULL" : "t0.\"_entity\""
    }

    /// ``objectSelect(_:)`` of `columns` when it joins nothing (none is a reference), so that
    /// it is the same text for every fetch of them; nil otherwise. `entity` is the second
    /// column (``entityColumn``).
    package static func plainObjectSelect(_ columns: [SelectedColumn], entity: String) -> String? {
        var select = objectKeyColumns(entity: entity)
        for column in columns {
            if case .reference = column.kind { return nil }
            select.append(SQL.column("t0", column.name))
        }
        return select.joined(separator: ", ")
    }

    /// What an objects fetch selects before its columns: the key, the entity, the version.
    private static func objectKeyColumns(entity: String) -> [String] {
        ["t0.\"_pk\"", entity, "t0.\"_version\""]
    }

    /// The relationship `name` of any entity of the fetched entity's hierarchy.
    private func relationship(named name: String) -> ResolvedRelationship? {
        for entityName in layout.table(for: root.entity).entities {
            if let found = schema[entityName]?.relationship(name) { return found }
        }
        return nil
    }

    /// A grouped aggregate: group keys and aggregations in the order given, grouped by the keys,
    /// sorted by `sortBy` and then by the keys ascending.
    package mutating func aggregate(_ descriptor: AggregateDescriptor) throws(ModelError) -> String {
        let table = layout.table(for: root.entity)
        let condition = try filter(
            descriptor.predicate, includesSubentities: descriptor.includesSubentities, table: table)
        var keys: [String: String] = [:]
        var select: [String] = []
        var groups: [String] = []
        for path in descriptor.groupBy {
            let key = try expression(.keyPath(path))
            let sql = key.sql + (key.type == .decimal ? dialect.decimalOrder : "")
            groups.append(sql)
            select.append(key.sql)
            keys[path.description] = sql
        }
        for aggregation in descriptor.aggregations {
            let sql = try aggregateExpression(aggregation)
            select.append(sql)
            let type = try aggregation.resultType(for: root.entity, in: schema)
            keys[aggregation.name] = sql + (type == .decimal ? dialect.decimalOrder : "")
        }
        var order = descriptor.sortBy.compactMap { sort in
            keys[sort.key].map { $0 + dialect.order(ascending: sort.ascending) }
        }
        order += groups.map { $0 + dialect.order(ascending: true) }
        var sql =
            "SELECT \(select.joined(separator: ", ")) FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition)"
        if !groups.isEmpty { sql += " GROUP BY \(groups.joined(separator: ", "))" }
        if !order.isEmpty { sql += " ORDER BY \(order.joined(separator: ", "))" }
        return sql + page(offset: descriptor.offset, limit: descriptor.limit)
    }

    private mutating func aggregateExpression(_ aggregation: Aggregation) throws(ModelError) -> String {
        guard let path = aggregation.keyPath else { return "count(*)" }
        let value = try expression(.keyPath(path))
        let type = value.type ?? .double
        switch aggregation.function {
        case .count: return "count(\(value.sql))"
        case .sum: return dialect.sum(value.sql, type)
        case .avg: return dialect.average(value.sql, type)
        case .min, .max: return dialect.extreme(aggregation.function.rawValue, value.sql, type)
        }
    }

    /// The `WHERE` condition: the entity filter and the predicate.
    package mutating func filter(_ predicate: Predicate?, includesSubentities: Bool, table: TableLayout)
        throws(ModelError) -> String
    {
        let entities = includesSubentities ? root.entity.descendants : [root.entity.name]
        var terms: [String] = []
        if let entityTerm = entityFilter(entities, alias: root.alias, table: table) { terms.append(entityTerm) }
        if let predicate {
            terms.append(try self.predicate(predicate))
            if let limit = dialect.maximumConditionValues, parameters.count > limit {
                throw ModelError(
                    .resourceExhausted,
                    "the predicate holds \(parameters.count) values; this store's backend takes at most \(limit) in one query: put long lists of values in IN { … }",
                    context: ["values": String(parameters.count), "limit": String(limit)])
            }
        }
        return terms.isEmpty ? dialect.constant(true) : terms.joined(separator: " AND ")
    }

    /// ` LIMIT ? OFFSET ?`, or "" when neither applies.
    private mutating func page(offset: Int, limit: Int?) -> String {
        guard limit != nil || offset > 0 else { return "" }
        let limitSQL = limit.map { bind(.int(Int64($0))) } ?? dialect.unlimited
        return " LIMIT \(limitSQL)" + (offset > 0 ? " OFFSET \(bind(.int(Int64(offset))))" : "")
    }
}
