import Foundation
import ModelCore
import ModelStorage

/// Changes an SQLite store's tables from one schema's layout to another's, inside the writer's
/// transaction, as ``SchemaChanges`` say (the plan has checked the data first). Renames are
/// SQLite's `ALTER TABLE … RENAME`, so no row is rewritten for them; an added attribute is
/// `ADD COLUMN` with the default as the column's default, which SQLite reads for existing rows
/// without writing them; a removed one is `DROP COLUMN`. Indexes whose statement changes are
/// dropped first and made again last; the others stay as they are.
struct SQLiteMigration {
    let old: SQLiteLayout
    let new: SQLiteLayout
    let changes: SchemaChanges
    let connection: SQLiteConnection

    /// New entity name by old one, for every entity that continues.
    private let continued: [String: String]

    init(old: SQLiteLayout, new: SQLiteLayout, changes: SchemaChanges, connection: SQLiteConnection) {
        self.old = old
        self.new = new
        self.changes = changes
        self.connection = connection
        continued = Dictionary(changes.entities.map { ($0.oldName, $0.name) }, uniquingKeysWith: { a, _ in a })
    }

    func run() throws {
        let oldIndexes = Self.indexStatements(old), newIndexes = Self.indexStatements(new)
        for (name, statement) in oldIndexes where newIndexes[name] != statement {
            try connection.execute("DROP INDEX IF EXISTS \(SQL.quote(name))")
        }
        try migrateTables()
        try migrateJoinTables()
        try clearDanglingReferences()
        for (name, statement) in newIndexes.sorted(by: { $0.key < $1.key }) where oldIndexes[name] != statement {
            try connection.execute(statement)
        }
        try renameInHistory()
        connection.clearCache()
    }

    /// Every `CREATE [UNIQUE] INDEX` statement of a layout, by index name.
    static func indexStatements(_ layout: SQLiteLayout) -> [String: String] {
        var statements: [String: String] = [:]
        for statement in layout.createStatements
        where statement.hasPrefix("CREATE INDEX") || statement.hasPrefix("CREATE UNIQUE INDEX") {
            // `CREATE [UNIQUE] INDEX "name" ON …`: the name is the first quoted identifier.
            guard let open = statement.firstIndex(of: "\""),
                let close = statement[statement.index(after: open)...].firstIndex(of: " ")
            else { continue }
            let quoted = statement[open..<close]
            statements[String(quoted.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")] = statement
        }
        return statements
    }

    /// Hierarchy tables: a new table continues the old one of its root's old name when that
    /// was a root too; the others are made; old tables nothing continues are dropped.
    private func migrateTables() throws {
        var kept = Set<String>()
        for table in new.tables {
            guard let oldRoot = continued.first(where: { $0.value == table.name })?.key,
                old.schema[oldRoot]?.superentity == nil
            else {
                try connection.execute("CREATE TABLE \(table.quoted) (\(SQLiteLayout.columnDefinitions(table)))")
                continue
            }
            kept.insert(oldRoot)
            let before = old.table(root: oldRoot)
            if oldRoot != table.name {
                try connection.execute("ALTER TABLE \(before.quoted) RENAME TO \(table.quoted)")
                try connection.run(
                    "UPDATE \(StoreMetadata.sequenceTable) SET \"name\" = ?1 WHERE \"name\" = ?2",
                    [.string(table.name), .string(oldRoot)])
            }
            try migrateColumns(of: table, from: before)
        }
        for table in old.tables where !kept.contains(table.name) {
            try connection.execute("DROP TABLE IF EXISTS \(table.quoted)")
        }
    }

    private func migrateColumns(of table: TableLayout, from before: TableLayout) throws {
        // Attribute renames of the hierarchy's entities: the column is the attribute's.
        var renamed: [String: String] = [:]
        for entity in changes.entities where table.entities.contains(entity.name) {
            for rename in entity.renamedAttributes { renamed[rename.old] = rename.new }
        }
        let newColumns = Set(table.columns.map(\.name))
        var present = Set<String>()
        for column in before.columns {
            let name = renamed[column.name] ?? column.name
            if newColumns.contains(name) {
                if name != column.name {
                    try connection.execute(
                        "ALTER TABLE \(table.quoted) RENAME COLUMN \(SQL.quote(column.name)) TO \(SQL.quote(name))")
                }
                present.insert(name)
            } else {
                try connection.execute("ALTER TABLE \(table.quoted) DROP COLUMN \(SQL.quote(column.name))")
            }
        }
        // Objects of entities that go: deleted with their rows.
        let removed = changes.removedEntities.filter { before.entities.contains($0) }
        if !removed.isEmpty {
            try connection.run(
                "DELETE FROM \(table.quoted) WHERE \"_entity\" IN (\(removed.map(SQL.literal).joined(separator: ", ")))"
            )
        }
        for rename in changes.renamedEntities where before.entities.contains(rename.old) {
            try connection.run(
                "UPDATE \(table.quoted) SET \"_entity\" = ?1 WHERE \"_entity\" = ?2",
                [.string(rename.new), .string(rename.old)])
        }
        for column in table.columns where !present.contains(column.name) {
            try addColumn(column, to: table)
        }
        // An attribute added where another entity of the hierarchy had a column of its name.
        for column in table.columns where present.contains(column.name) {
            for (value, scope) in defaultFills(of: column.name, in: table) {
                try fill(column.name, of: table, with: value, in: scope, onlyNil: false)
            }
        }
        for entity in changes.entities where table.entities.contains(entity.name) {
            for attribute in entity.requiredAttributes {
                guard let value = attribute.defaultValue, let scope = new.schema[entity.name]?.descendants else {
                    continue
                }
                try fill(attribute.name, of: table, with: value, in: scope, onlyNil: true)
            }
        }
    }

    /// Adds `column`; existing objects of the entities that declare it with a default get the
    /// default, others nil. One default for all of them is the column's `DEFAULT`, which SQLite
    /// reads for the existing rows without writing them.
    private func addColumn(_ column: TableLayout.Column, to table: TableLayout) throws {
        let declaration = "\(SQL.quote(column.name)) \(SQL.declaration(column.type))"
        let fills = defaultFills(of: column.name, in: table)
        guard fills.count == 1, let (value, scope) = fills.first, let literal = SQL.constant(value) else {
            try connection.execute("ALTER TABLE \(table.quoted) ADD COLUMN \(declaration)")
            for (value, scope) in fills { try fill(column.name, of: table, with: value, in: scope, onlyNil: false) }
            return
        }
        try connection.execute("ALTER TABLE \(table.quoted) ADD COLUMN \(declaration) DEFAULT \(literal)")
        // Rows of the hierarchy's other entities have no such attribute: nil, as before.
        let others = table.entities.filter { !scope.contains($0) }
        if !others.isEmpty {
            try connection.run(
                "UPDATE \(table.quoted) SET \(SQL.quote(column.name)) = NULL WHERE \"_entity\" IN (\(others.map(SQL.literal).joined(separator: ", ")))"
            )
        }
    }

    /// For an attribute added to entities of `table`: each default, with the entities (the
    /// declaring ones and their subentities) whose existing objects get it.
    private func defaultFills(of attribute: String, in table: TableLayout) -> [(Value, [String])] {
        var fills: [Value: [String]] = [:]
        for entity in changes.entities where table.entities.contains(entity.name) {
            guard let value = entity.addedAttributes.first(where: { $0.name == attribute })?.defaultValue else {
                continue
            }
            fills[value, default: []] += new.schema[entity.name]?.descendants ?? []
        }
        return fills.map { ($0.key, $0.value) }
    }

    /// Sets `column` to `value` for the objects of `entities` (those holding nil, or all).
    private func fill(_ column: String, of table: TableLayout, with value: Value, in entities: [String], onlyNil: Bool)
        throws
    {
        try connection.run(
            "UPDATE \(table.quoted) SET \(SQL.quote(column)) = ?1 WHERE \(onlyNil ? "\(SQL.quote(column)) IS NULL AND " : "")\"_entity\" IN (\(entities.map(SQL.literal).joined(separator: ", ")))",
            [value])
    }

    /// Join tables follow their owning relationship: renamed with its entity, made, dropped.
    private func migrateJoinTables() throws {
        var kept = Set<String>()
        for join in new.schema.joinTables {
            let oldOwner = continued.first { $0.value == join.ownerEntity }?.key
            if let before = old.schema.joinTables.first(where: {
                $0.ownerEntity == oldOwner && $0.ownerRelationship == join.ownerRelationship
            }) {
                kept.insert(before.name)
                if before.name != join.name {
                    try connection.execute("ALTER TABLE \(SQL.quote(before.name)) RENAME TO \(SQL.quote(join.name))")
                }
            } else {
                try connection.execute(
                    "CREATE TABLE \(SQL.quote(join.name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID"
                )
            }
        }
        for join in old.schema.joinTables where !kept.contains(join.name) {
            try connection.execute("DROP TABLE IF EXISTS \(SQL.quote(join.name))")
        }
        // Rows whose objects were deleted with their entity.
        guard !changes.removedEntities.isEmpty else { return }
        for join in new.schema.joinTables {
            try connection.run(
                "DELETE FROM \(SQL.quote(join.name)) WHERE \"source\" NOT IN (SELECT \"_pk\" FROM \(SQL.quote(join.sourceRoot))) OR \"target\" NOT IN (SELECT \"_pk\" FROM \(SQL.quote(join.targetRoot)))"
            )
        }
    }

    /// Foreign keys that pointed to objects deleted with their entity are cleared, as the
    /// references of a nullify rule would be.
    private func clearDanglingReferences() throws {
        let lostRows = Set(changes.removedEntities.compactMap { old.schema[$0]?.root }.compactMap { continued[$0] })
        guard !lostRows.isEmpty else { return }
        for table in new.tables {
            for column in table.columns where column.type == nil {
                let relationship = table.entities.lazy.compactMap { self.new.schema[$0]?.relationship(column.name) }
                    .first
                guard let root = relationship.flatMap({ new.schema[$0.destination]?.root }), lostRows.contains(root)
                else { continue }
                try connection.run(
                    "UPDATE \(table.quoted) SET \(SQL.quote(column.name)) = NULL WHERE \(SQL.quote(column.name)) NOT IN (SELECT \"_pk\" FROM \(SQL.quote(root)))"
                )
            }
        }
    }

    /// History names objects by entity: a renamed entity's past changes name it by its new name.
    private func renameInHistory() throws {
        for rename in changes.renamedEntities {
            try connection.run(
                "UPDATE \(StoreMetadata.changeTable) SET \"entity\" = ?1 WHERE \"entity\" = ?2",
                [.string(rename.new), .string(rename.old)])
        }
    }
}

extension SQL {
    /// `value` as an SQL constant stored as a bound value would be (dates as microseconds,
    /// decimals as canonical text…), for a column's `DEFAULT`; nil when it has none (a double
    /// that is not finite, text with a NUL).
    static func constant(_ value: Value) -> String? {
        switch value {
        case .null: return "NULL"
        case .int(let v): return String(v)
        case .double(let v): return v.isFinite ? "\(v)" : nil
        case .bool(let v): return v ? "1" : "0"
        case .date(let v): return String(v.microsecondsSince1970)
        case .string(let v), .json(let v): return v.contains("\0") ? nil : literal(v)
        case .uuid(let v): return literal(v.lowercasedText)
        case .url(let v): return literal(v.absoluteString)
        case .decimal(let v): return literal(v.canonicalText)
        case .data(let v): return "X'" + v.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}
