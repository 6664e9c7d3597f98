import ModelCore
import ModelStorage

/// How a resolved schema is laid out in a store's PostgreSQL schema (namespace), as on SQLite:
/// one table per inheritance hierarchy, named after its root entity, with `_pk`, `_entity`,
/// `_version`, a column per attribute of every entity of the hierarchy and one per to-one
/// relationship stored as a foreign key; the schema's join tables; indexes on foreign keys, on
/// join tables' targets, on `_entity` where a hierarchy has subentities; a unique index per
/// unique constraint (partial over the entities that have it); the schema's indexes.
struct PostgresLayout: SQLTableLayout {
    let schema: ResolvedSchema
    let namespace: String
    let tables: [TableLayout]
    /// The statement reading a hierarchy's objects by key, by root entity
    /// (``PostgresObjects/objectsStatement(root:)``), compiled once here rather than at every read.
    private(set) var objectStatements: [String: ObjectsStatement] = [:]
    typealias ObjectsStatement = (sql: String, columns: [SelectedColumn], reads: [String: ColumnReads])

    init(_ schema: ResolvedSchema, namespace: String) {
        self.schema = schema
        self.namespace = namespace
        tables = Self.hierarchyTables(of: schema)
        var statements: [String: ObjectsStatement] = [:]
        for table in tables {
            statements[table.name] = PostgresObjects.compileObjectsStatement(root: table.name, layout: self)
        }
        objectStatements = statements
    }

    /// `"namespace"."name"`.
    func qualified(_ name: String) -> String {
        SQL.quote(namespace) + "." + SQL.quote(name)
    }

    /// The statements that create the tables and indexes of an empty store.
    var createStatements: [String] {
        var statements: [String] = []
        var indexCount = 0
        // Index names are the namespace's and at most 63 bytes: numbered, with the table's name
        // after, cut to fit. Columns NULLS FIRST, the order sorts ask for (nil first ascending,
        // as on SQLite), so an index serves `ORDER BY … ASC NULLS FIRST` forwards and
        // `DESC NULLS LAST` backwards rather than leave every matching row to be sorted.
        func index(_ table: String, _ columns: [String], unique: Bool = false, where scope: String? = nil) {
            indexCount += 1
            let name = String("_i\(indexCount)_\(table)".utf8.prefix(PostgresEndpoint.maximumIdentifierLength))!
            statements.append(
                "CREATE \(unique ? "UNIQUE " : "")INDEX \(SQL.quote(name)) ON \(qualified(table)) (\(columns.map { SQL.quote($0) + " NULLS FIRST" }.joined(separator: ", ")))"
                    + (scope.map { " WHERE \($0)" } ?? ""))
        }
        for table in tables {
            statements.append(createTable(table))
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
            statements.append(createJoinTable(join.name))
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

    /// `CREATE TABLE` for a hierarchy table.
    func createTable(_ table: TableLayout) -> String {
        let columns =
            [
                "\"_pk\" bigint PRIMARY KEY", "\"_entity\" text COLLATE \"C\" NOT NULL",
                "\"_version\" bigint NOT NULL",
            ] + table.columns.flatMap { Self.columnDefinitions($0) }
        return "CREATE TABLE \(qualified(table.name)) (\(columns.joined(separator: ", ")))"
    }

    /// The definitions of a column and of the folded forms kept beside a string attribute, with
    /// `defaultSQL` as the column's default.
    static func columnDefinitions(_ column: TableLayout.Column, default defaultSQL: String? = nil) -> [String] {
        let type = column.type.map(PostgresValues.columnType) ?? "bigint"
        let own = "\(SQL.quote(column.name)) \(type)" + (defaultSQL.map { " DEFAULT \($0)" } ?? "")
        return [own] + folded(column).map { "\(SQL.quote($0)) \(type)" }
    }

    /// The folded forms' columns of a string attribute's column (none for other columns).
    static func folded(_ column: TableLayout.Column) -> [String] {
        column.type == .string ? foldings.map { foldedColumn(column.name, $0) } : []
    }

    /// `CREATE TABLE` for a join table.
    func createJoinTable(_ name: String) -> String {
        "CREATE TABLE \(qualified(name)) (\"source\" bigint NOT NULL, \"target\" bigint NOT NULL, PRIMARY KEY (\"source\", \"target\"))"
    }

    /// The condition that restricts a unique constraint to the entities of `table` that have it,
    /// or nil when all of them do. The unique index and the save's lookups use the same text,
    /// so PostgreSQL matches the lookup to the partial index.
    func constraintScope(_ constraint: [String], in table: TableLayout) -> String? {
        let scope = table.entities.filter { schema[$0]?.uniqueConstraints.contains(constraint) ?? false }
        guard scope.count != table.entities.count else { return nil }
        return "\"_entity\" IN (\(scope.map(SQL.literal).joined(separator: ", ")))"
    }

    /// The table of the hierarchy `root`.
    func table(root: String) -> TableLayout {
        // Every entity's root is a root entity of the same schema, so its table exists.
        tables.first { $0.name == root } ?? TableLayout(name: root, columns: [], entities: [])
    }

    /// The column holding the attribute `name`'s strings folded with `options` (``TextComparison/fold(_:options:)``,
    /// computed by the save): PostgreSQL has no function that folds as Foundation does, so a
    /// string attribute keeps its `[c]`, `[d]` and `[cd]` forms beside it, and comparisons with
    /// options read those.
    static func foldedColumn(_ name: String, _ options: StringOptions) -> String {
        let letters =
            switch (options.contains(.caseInsensitive), options.contains(.diacriticInsensitive)) {
            case (true, true): "/cd"
            case (true, false): "/c"
            case (false, true): "/d"
            case (false, false): "/"
            }
        return name + letters
    }

    /// The option sets a string attribute keeps folded forms for.
    static let foldings: [StringOptions] = [
        .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive],
    ]

    /// `columns` (attribute or foreign-key name, value) with the folded forms of each string
    /// attribute of `entity` added after.
    static func withFoldedForms(_ columns: [(String, Value)], of entity: ResolvedEntity) -> [(String, Value)] {
        var all = columns
        for (name, value) in columns where entity.attribute(name)?.type == .string {
            for options in foldings {
                let folded: Value =
                    if case .string(let text) = value { .string(TextComparison.fold(text, options: options)) } else {
                        .null
                    }
                all.append((foldedColumn(name, options), folded))
            }
        }
        return all
    }

    /// The statements that drop the schema's tables (their indexes go with them).
    var dropStatements: [String] {
        (tables.map(\.name) + schema.joinTables.map(\.name)).map { "DROP TABLE IF EXISTS \(qualified($0))" }
    }
}
