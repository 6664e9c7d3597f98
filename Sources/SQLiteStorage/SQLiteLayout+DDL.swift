import ModelCore
import ModelStorage

extension SQLiteLayout {
    /// The statements that create the schema's tables and indexes in an empty store: hierarchy
    /// tables, join tables, an index on every foreign-key and join-table column, on `_entity` of
    /// hierarchies with subentities, a `UNIQUE` index per unique constraint and hierarchy (partial,
    /// over the entities that have it, when not all of them do) and the schema's indexes.
    var createStatements: [String] {
        var statements: [String] = []
        for table in tables {
            statements.append("CREATE TABLE \(table.quoted) (\(Self.columnDefinitions(table)))")
            if table.entities.count > 1 {
                statements.append("CREATE INDEX \(SQL.quote("_entity_\(table.name)")) ON \(table.quoted)(\"_entity\")")
            }
        }
        for join in schema.joinTables {
            statements.append(
                "CREATE TABLE \(SQL.quote(join.name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID"
            )
            statements.append(
                "CREATE INDEX \(SQL.quote("_target_\(join.name)")) ON \(SQL.quote(join.name))(\"target\", \"source\")")
        }
        var indexed = Set<[String]>()
        func index(_ table: TableLayout, _ columns: [String], name: String) {
            guard !columns.isEmpty, indexed.insert([table.name] + columns).inserted else { return }
            statements.append(
                "CREATE INDEX \(SQL.quote(name)) ON \(table.quoted)(\(columns.map(SQL.quote).joined(separator: ", ")))")
        }
        for table in tables {
            for column in table.columns where column.type == nil {
                index(table, [column.name], name: "_fk_\(table.name)_\(column.name)")
            }
        }
        for table in tables {
            var constraints: [[String]] = []
            for name in table.entities {
                for constraint in schema[name]?.uniqueConstraints ?? [] where !constraints.contains(constraint) {
                    constraints.append(constraint)
                }
            }
            for constraint in constraints {
                let name = SQL.quote("_unique_\(table.name)_\(constraint.joined(separator: ","))")
                let partial = Self.constraintScope(constraint, in: table, schema: schema).map { " WHERE \($0)" } ?? ""
                statements.append(
                    "CREATE UNIQUE INDEX \(name) ON \(table.quoted)(\(constraint.map(SQL.quote).joined(separator: ", ")))\(partial)"
                )
            }
        }
        for declared in schema.schema.entities {
            guard let entity = schema[declared.name] else { continue }
            let table = table(for: entity)
            for columns in declared.indexes {
                // A to-one relationship whose key the other side holds has no column here.
                let stored = columns.filter { name in
                    entity.attribute(name) != nil || entity.relationship(name)?.storage == .foreignKey
                }
                index(table, stored, name: "_index_\(declared.name)_\(stored.joined(separator: ","))")
            }
        }
        return statements
    }

    /// The condition that restricts a unique constraint to the entities of `table` that have it
    /// (declared or inherited), or nil when all of them do. The unique index and the save's
    /// lookups use the same text, so SQLite matches the lookup to the partial index.
    static func constraintScope(_ constraint: [String], in table: TableLayout, schema: ResolvedSchema) -> String? {
        let scope = table.entities.filter { schema[$0]?.uniqueConstraints.contains(constraint) ?? false }
        guard scope.count != table.entities.count else { return nil }
        return "\"_entity\" IN (\(scope.map(SQL.literal).joined(separator: ", ")))"
    }

    /// The statements that drop the schema's tables (their indexes go with them).
    var dropStatements: [String] {
        (tables.map(\.name) + schema.joinTables.map(\.name)).map { "DROP TABLE IF EXISTS \(SQL.quote($0))" }
    }

    /// `"_pk" INTEGER PRIMARY KEY, "_entity" TEXT NOT NULL, "_version" INTEGER NOT NULL, …`.
    static func columnDefinitions(_ table: TableLayout) -> String {
        (["\"_pk\" INTEGER PRIMARY KEY", "\"_entity\" TEXT NOT NULL", "\"_version\" INTEGER NOT NULL"]
            + table.columns.map { "\(SQL.quote($0.name)) \(SQL.declaration($0.type))" }).joined(separator: ", ")
    }
}
