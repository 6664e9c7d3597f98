import ModelCore

/// What one selected object column holds, in the order of the `SELECT` after `_pk`, `_entity`
/// and `_version`: an attribute (one SQL column) or a to-one foreign key (two: the key and the
/// target's `_entity`, NULL when the reference dangles).
struct SelectedColumn {
    enum Kind {
        case attribute(AttributeType)
        case reference
    }

    let name: String
    let kind: Kind
}

extension SQLCompiler {
    /// `SELECT … FROM … WHERE … ORDER BY … LIMIT … OFFSET …` for a validated fetch. For objects
    /// the select list is `_pk`, `_entity`, `_version` and `columns`; for identifiers `_pk`,
    /// `_entity`; for a count, one `count(*)` after offset and limit.
    mutating func fetch(_ descriptor: FetchDescriptor, columns: [SelectedColumn]) throws(ModelError) -> String {
        let table = layout.table(for: root.entity)
        let condition = try filter(
            descriptor.predicate, includesSubentities: descriptor.includesSubentities, table: table)
        var order: [String] = []
        for sort in descriptor.sortBy {
            var key = try expression(.keyPath(sort.keyPath)).sql
            if sort.caseInsensitive { key = "modeld_fold(\(key), \(StringOptions.caseInsensitive.rawValue))" }
            order.append(key + (sort.ascending ? " ASC" : " DESC"))
        }
        order.append("t0.\"_pk\" ASC")
        let paging = page(offset: descriptor.offset, limit: descriptor.limit)
        switch descriptor.resultType {
        case .count:
            if paging.isEmpty {
                return "SELECT count(*) FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition)"
            }
            return
                "SELECT count(*) FROM (SELECT t0.\"_pk\" FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition) ORDER BY \(order.joined(separator: ", "))\(paging))"
        case .identifiers:
            return
                "SELECT t0.\"_pk\", t0.\"_entity\" FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition) ORDER BY \(order.joined(separator: ", "))\(paging)"
        case .objects:
            let select = objectSelect(columns)
            return
                "SELECT \(select) FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition) ORDER BY \(order.joined(separator: ", "))\(paging)"
        }
    }

    /// `t0."_pk", t0."_entity", t0."_version", …` for `columns`, joining each foreign key's
    /// target for its entity name.
    mutating func objectSelect(_ columns: [SelectedColumn]) -> String {
        var select = ["t0.\"_pk\"", "t0.\"_entity\"", "t0.\"_version\""]
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

    /// The relationship `name` of any entity of the fetched entity's hierarchy.
    private func relationship(named name: String) -> ResolvedRelationship? {
        for entityName in layout.table(for: root.entity).entities {
            if let found = schema[entityName]?.relationship(name) { return found }
        }
        return nil
    }

    /// A grouped aggregate: group keys and aggregations in the order given, grouped by the keys,
    /// sorted by `sortBy` and then by the keys ascending.
    mutating func aggregate(_ descriptor: AggregateDescriptor) throws(ModelError) -> String {
        let table = layout.table(for: root.entity)
        let condition = try filter(
            descriptor.predicate, includesSubentities: descriptor.includesSubentities, table: table)
        var keys: [String: String] = [:]
        var select: [String] = []
        var groups: [String] = []
        for path in descriptor.groupBy {
            let key = try expression(.keyPath(path))
            let sql = key.sql + (key.type == .decimal ? " COLLATE \(SQLiteFunctions.decimalCollation)" : "")
            groups.append(sql)
            select.append(key.sql)
            keys[path.description] = sql
        }
        for aggregation in descriptor.aggregations {
            let sql = try aggregateExpression(aggregation)
            select.append(sql)
            let type = try aggregation.resultType(for: root.entity, in: schema)
            keys[aggregation.name] = sql + (type == .decimal ? " COLLATE \(SQLiteFunctions.decimalCollation)" : "")
        }
        var order = descriptor.sortBy.compactMap { sort in
            keys[sort.key].map { $0 + (sort.ascending ? " ASC" : " DESC") }
        }
        order += groups.map { $0 + " ASC" }
        var sql =
            "SELECT \(select.joined(separator: ", ")) FROM \(table.quoted) AS t0\(root.joinClause) WHERE \(condition)"
        if !groups.isEmpty { sql += " GROUP BY \(groups.joined(separator: ", "))" }
        if !order.isEmpty { sql += " ORDER BY \(order.joined(separator: ", "))" }
        return sql + page(offset: descriptor.offset, limit: descriptor.limit)
    }

    /// The statement a grouped count runs when it counts in a hash table (``HashAggregate``): it
    /// gives `modeld_group_count` (``GroupCounter``) the group keys, then per aggregation its key
    /// path (or 1 for `count(*)`), for every object the filter admits. With `keyRange`, only
    /// the objects whose key lies between the two parameters after ``parameters`` (`?N+1` and
    /// `?N+2`, bound per run) are counted: a part of the table, as ``ParallelGroupScan`` splits it.
    mutating func groupScan(_ descriptor: AggregateDescriptor, keyRange: Bool = false) throws(ModelError) -> String {
        let table = layout.table(for: root.entity)
        let condition = try filter(
            descriptor.predicate, includesSubentities: descriptor.includesSubentities, table: table)
        var arguments: [String] = []
        for path in descriptor.groupBy { arguments.append(try expression(.keyPath(path)).sql) }
        // count(*) counts a value that is never NULL.
        for aggregation in descriptor.aggregations {
            if let path = aggregation.keyPath {
                arguments.append(try expression(.keyPath(path)).sql)
            } else {
                arguments.append("1")
            }
        }
        let scan =
            "SELECT \(GroupCounter.functionName)(\(arguments.joined(separator: ", "))) FROM \(table.quoted) AS t0\(root.joinClause)"
        guard keyRange else { return scan + " WHERE \(condition)" }
        return scan
            + " WHERE (\(condition)) AND t0.\"_pk\" BETWEEN ?\(parameters.count + 1) AND ?\(parameters.count + 2)"
    }

    private mutating func aggregateExpression(_ aggregation: Aggregation) throws(ModelError) -> String {
        guard let path = aggregation.keyPath else { return "count(*)" }
        let value = try expression(.keyPath(path))
        let code = SQLiteFunctions.typeCode(value.type ?? .double)
        switch aggregation.function {
        case .count: return "count(\(value.sql))"
        case .sum: return "modeld_sum(\(value.sql), \(code))"
        case .avg: return "modeld_avg(\(value.sql), \(code))"
        case .min, .max:
            let collate = value.type == .decimal ? " COLLATE \(SQLiteFunctions.decimalCollation)" : ""
            return "\(aggregation.function.rawValue)(\(value.sql)\(collate))"
        }
    }

    /// The `WHERE` condition: the entity filter and the predicate.
    private mutating func filter(_ predicate: Predicate?, includesSubentities: Bool, table: TableLayout)
        throws(ModelError) -> String
    {
        let entities = includesSubentities ? root.entity.descendants : [root.entity.name]
        var terms: [String] = []
        if let entityTerm = entityFilter(entities, alias: root.alias, table: table) { terms.append(entityTerm) }
        if let predicate { terms.append(try self.predicate(predicate)) }
        return terms.isEmpty ? "1" : terms.joined(separator: " AND ")
    }

    /// ` LIMIT ? OFFSET ?`, or "" when neither applies.
    private mutating func page(offset: Int, limit: Int?) -> String {
        guard limit != nil || offset > 0 else { return "" }
        let limitSQL = limit.map { bind(.int(Int64($0))) } ?? "-1"
        return " LIMIT \(limitSQL)" + (offset > 0 ? " OFFSET \(bind(.int(Int64(offset))))" : "")
    }
}
