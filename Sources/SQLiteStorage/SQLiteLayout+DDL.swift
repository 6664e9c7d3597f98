import ModelCore

extension SQLiteLayout {
    /// The statements that create the schema's tables and indexes in an empty store: hierarchy
    /// tables, join tables, an index on every foreign-key and join-table column, on `_entity` of
    /// hierarchies with subentities, a `UNIQUE` index per unique constraint (partial, over the
    /// declaring entity and its subentities, when that is not the root) and the schema's indexes.
    var createStatements: [String] {
        var statements: [String] = []
        for table in tables {
            statements.append("CREATE TABLE \(table.quoted) (\(Self.columnDefinitions(table)))")
            if table.entities.count > 1 {
                statements.append("CREATE INDEX \(SQL.quote("_entity_\(table.name)")) ON \(table.quoted)(\"_entity\")")
            }
        }
        for join in schema.joinTables {
            statements.append("CREATE TABLE \(SQL.quote(join.name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID")
            statements.append("CREATE INDEX \(SQL.quote("_target_\(join.name)")) ON \(SQL.quote(join.name))(\"target\", \"source\")")
        }
        var indexed = Set<[String]>()
        func index(_ table: TableLayout, _ columns: [String], name: String) {
            guard !columns.isEmpty, indexed.insert([table.name] + columns).inserted else { return }
            statements.append("CREATE INDEX \(SQL.quote(name)) ON \(table.quoted)(\(columns.map(SQL.quote).joined(separator: ", ")))")
        }
        for table in tables {
            for column in table.columns where column.type == nil {
                index(table, [column.name], name: "_fk_\(table.name)_\(column.name)")
            }
        }
        for declared in schema.schema.entities {
            guard let entity = schema[declared.name] else { continue }
            let table = table(for: entity)
            for constraint in declared.uniqueConstraints {
                let name = SQL.quote("_unique_\(declared.name)_\(constraint.joined(separator: ","))")
                let columns = constraint.map(SQL.quote).joined(separator: ", ")
                let partial = entity.superentity == nil ? ""
                    : " WHERE \"_entity\" IN (\(entity.descendants.map(SQL.literal).joined(separator: ", ")))"
                statements.append("CREATE UNIQUE INDEX \(name) ON \(table.quoted)(\(columns))\(partial)")
            }
            for columns in declared.indexes {
                // A to-one relationship whose key the other side holds has no column here.
                let stored = columns.filter { name in entity.attribute(name) != nil || entity.relationship(name)?.storage == .foreignKey }
                index(table, stored, name: "_index_\(declared.name)_\(stored.joined(separator: ","))")
            }
        }
        return statements
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
