import ModelCore

/// How a resolved schema is laid out in a store's PostgreSQL schema (namespace), as on SQLite:
/// one table per inheritance hierarchy, named after its root entity, with `_pk`, `_entity`,
/// `_version`, a column per attribute of every entity of the hierarchy and one per to-one
/// relationship stored as a foreign key; the schema's join tables; indexes on foreign keys, on
/// join tables' targets, on `_entity` where a hierarchy has subentities; a unique index per
/// unique constraint (partial over the entities that have it); the schema's indexes.
struct PostgresLayout: Sendable {
    struct Table: Sendable {
        /// A column after `_pk`, `_entity` and `_version`: an attribute (`type` set) or a foreign key.
        struct Column: Sendable {
            let name: String
            let type: AttributeType?
        }
        let name: String
        let columns: [Column]
        let entities: [String]
    }

    let schema: ResolvedSchema
    let namespace: String
    let tables: [Table]

    init(_ schema: ResolvedSchema, namespace: String) {
        self.schema = schema
        self.namespace = namespace
        tables = schema.rootEntities.map { root in
            var columns: [Table.Column] = []
            var seen = Set<String>()
            for name in root.descendants {
                guard let entity = schema[name] else { continue }
                for attribute in entity.attributes where seen.insert(attribute.name).inserted {
                    columns.append(.init(name: attribute.name, type: attribute.type))
                }
                for relationship in entity.relationships
                where relationship.storage == .foreignKey && seen.insert(relationship.name).inserted {
                    columns.append(.init(name: relationship.name, type: nil))
                }
            }
            return Table(name: root.name, columns: columns, entities: root.descendants)
        }
    }

    /// `"namespace"."name"`.
    func qualified(_ name: String) -> String {
        PostgresSQL.quote(namespace) + "." + PostgresSQL.quote(name)
    }

    /// The statements that create the tables and indexes of an empty store.
    var createStatements: [String] {
        var statements: [String] = []
        var indexCount = 0
        // Index names are the namespace's and at most 63 bytes: numbered, with the table's name
        // after, cut to fit.
        func index(_ table: String, _ columns: [String], unique: Bool = false, where scope: String? = nil) {
            indexCount += 1
            let name = String("_i\(indexCount)_\(table)".utf8.prefix(PostgresEndpoint.maximumIdentifierLength))!
            statements.append(
                "CREATE \(unique ? "UNIQUE " : "")INDEX \(PostgresSQL.quote(name)) ON \(qualified(table)) (\(columns.map(PostgresSQL.quote).joined(separator: ", ")))"
                    + (scope.map { " WHERE \($0)" } ?? ""))
        }
        for table in tables {
            let columns =
                ["\"_pk\" bigint PRIMARY KEY", "\"_entity\" text NOT NULL", "\"_version\" bigint NOT NULL"]
                + table.columns.map {
                    "\(PostgresSQL.quote($0.name)) \($0.type.map(PostgresValues.columnType) ?? "bigint")"
                }
            statements.append("CREATE TABLE \(qualified(table.name)) (\(columns.joined(separator: ", ")))")
            if table.entities.count > 1 { index(table.name, ["_entity"]) }
            for column in table.columns where column.type == nil { index(table.name, [column.name]) }
            var constraints: [[String]] = []
            for name in table.entities {
                for constraint in schema[name]?.uniqueConstraints ?? [] where !constraints.contains(constraint) {
                    constraints.append(constraint)
                }
            }
            for constraint in constraints {
                index(table.name, constraint, unique: true, where: constraintScope(constraint, in: table))
            }
        }
        for join in schema.joinTables {
            statements.append(
                "CREATE TABLE \(qualified(join.name)) (\"source\" bigint NOT NULL, \"target\" bigint NOT NULL, PRIMARY KEY (\"source\", \"target\"))"
            )
            index(join.name, ["target", "source"])
        }
        for declared in schema.schema.entities {
            guard let entity = schema[declared.name] else { continue }
            for columns in declared.indexes {
                let stored = columns.filter { name in
                    entity.attribute(name) != nil || entity.relationship(name)?.storage == .foreignKey
                }
                if !stored.isEmpty { index(entity.root, stored) }
            }
        }
        return statements
    }

    /// The condition that restricts a unique constraint to the entities of `table` that have it,
    /// or nil when all of them do. The unique index and the save's lookups use the same text,
    /// so PostgreSQL matches the lookup to the partial index.
    func constraintScope(_ constraint: [String], in table: Table) -> String? {
        let scope = table.entities.filter { schema[$0]?.uniqueConstraints.contains(constraint) ?? false }
        guard scope.count != table.entities.count else { return nil }
        return "\"_entity\" IN (\(scope.map(PostgresSQL.literal).joined(separator: ", ")))"
    }

    /// The table of the hierarchy `root`.
    func table(root: String) -> Table? {
        tables.first { $0.name == root }
    }

    /// The statements that drop the schema's tables (their indexes go with them).
    var dropStatements: [String] {
        (tables.map(\.name) + schema.joinTables.map(\.name)).map { "DROP TABLE IF EXISTS \(qualified($0))" }
    }
}

/// Building blocks of PostgreSQL text.
enum PostgresSQL {
    /// A double-quoted identifier.
    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A single-quoted string literal (for names in DDL, where a statement cannot take binds).
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
