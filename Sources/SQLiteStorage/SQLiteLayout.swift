import ModelCore
import ModelStorage
import Synchronization

/// How a resolved schema is laid out in SQLite: one table per inheritance hierarchy, named after
/// the root entity, with `_pk`, `_entity`, `_version`, a column per attribute of every entity of
/// the hierarchy and one per to-one relationship stored as a foreign key; and the schema's join
/// tables. Immutable and shared by every connection.
final class SQLiteLayout: SQLTableLayout {
    let schema: ResolvedSchema
    /// Hierarchy tables by root entity name, in declaration order of the roots.
    let tables: [TableLayout]
    private let tablesByRoot: [String: TableLayout]
    /// Roots of the hierarchies whose objects one statement reads whole: every relationship of
    /// every entity of the hierarchy is a foreign key in its own row.
    private let rootsReadInOneStatement: Set<String>
    /// ``objectsByKey(root:)``'s statements, made at first use.
    let objectsByKeyStatements = Mutex<[String: ObjectsByKeyStatement]>([:])
    /// The entity ``pointReadStatement(of:)`` was last asked for, and its statement.
    let lastPointRead = Mutex<(entityName: String, statement: ObjectsByKeyStatement)?>(nil)
    /// ``allColumns(of:includesSubentities:)``'s selections, made at first use.
    let allColumnsSelections = Mutex<[AllColumnsKey: ObjectsSelection]>([:])
    /// The objects fetches compiled over this layout, by shape.
    let compiledQueries = CompiledQueries()
    /// ``insertStatement(for:)``'s statements by entity name, made at first use.
    private let insertStatements = Mutex<[String: (sql: String, columns: [String])]>([:])

    init(_ schema: ResolvedSchema) {
        self.schema = schema
        let tables = Self.hierarchyTables(of: schema)
        self.tables = tables
        self.tablesByRoot = Dictionary(uniqueKeysWithValues: tables.map { ($0.name, $0) })
        self.rootsReadInOneStatement = Set(
            tables.filter { table in
                table.entities.allSatisfy { name in
                    schema[name]?.relationships.allSatisfy { $0.storage == .foreignKey } ?? true
                }
            }.map(\.name))
    }

    /// Whether one statement reads the objects of the hierarchy `root` whole, their
    /// relationships included (so that it needs no read transaction of its own: a statement is
    /// one snapshot).
    func readsObjectsInOneStatement(root: String) -> Bool {
        rootsReadInOneStatement.contains(root)
    }

    /// The table named after the root entity `root`.
    func table(root: String) -> TableLayout {
        // Every entity's root is a root entity of the same schema, so its table exists.
        tablesByRoot[root] ?? TableLayout(name: root, columns: [], entities: [])
    }

    /// `INSERT INTO <table> ("_pk", "_entity", "_version", <columns>) VALUES (?1, …)` for objects of
    /// `entity`, and the columns after the first three: every attribute of the entity, then every
    /// foreign key it stores. Bind the key, the entity name, the version, then the columns' values.
    func insertStatement(for entity: ResolvedEntity, into table: String) -> (sql: String, columns: [String]) {
        let columns =
            entity.attributes.map(\.name) + entity.relationships.filter { $0.storage == .foreignKey }.map(\.name)
        let names = (["_pk", "_entity", "_version"] + columns).map(SQL.quote).joined(separator: ", ")
        let parameters = (1...(columns.count + 3)).map { "?\($0)" }.joined(separator: ", ")
        return ("INSERT INTO \(table) (\(names)) VALUES (\(parameters))", columns)
    }

    /// ``insertStatement(for:into:)`` into the table of `entity`'s hierarchy, made once per
    /// entity (perf put building it per save at about 3% of the daemon's time with 32 clients
    /// each saving one object).
    func insertStatement(for entity: ResolvedEntity) -> (sql: String, columns: [String]) {
        if let made = insertStatements.withLock({ $0[entity.name] }) { return made }
        let made = insertStatement(for: entity, into: table(for: entity).quoted)
        insertStatements.withLock { $0[entity.name] = made }
        return made
    }

    /// The entity `name` of the schema, or `unknownEntity`.
    func entity(_ name: String) throws(ModelError) -> ResolvedEntity {
        try schema.entity(name)
    }
}

extension SQL {
    /// The declared type of a column holding `type` (nil: a foreign key).
    static func declaration(_ type: AttributeType?) -> String {
        switch type {
        case nil, .int, .bool, .date: "INTEGER"
        case .double: "REAL"
        case .data: "BLOB"
        case .decimal: "TEXT COLLATE \(SQLiteFunctions.decimalCollation)"
        case .string, .uuid, .url, .json: "TEXT"
        }
    }
}
