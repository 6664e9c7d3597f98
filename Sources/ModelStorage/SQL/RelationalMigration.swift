import Foundation
import ModelCore

/// What a relational backend gives ``RelationalMigration``: its statements and the shape of its
/// tables. Tables are named without a namespace (PostgreSQL's connections have the store's in
/// their search path).
package protocol RelationalMigrationTarget {
    /// Runs `sql`, binding `values` to the dialect's placeholders (`?1` or `$1`…).
    func run(_ sql: String, _ values: [Value]) throws
    /// The placeholder of the `index`th value (1-based).
    func placeholder(_ index: Int) -> String
    /// `CREATE TABLE` for a hierarchy table of the new layout.
    func createTable(_ table: TableLayout) -> String
    /// `CREATE TABLE` for a join table.
    func createJoinTable(_ name: String) -> String
    /// Every `CREATE [UNIQUE] INDEX "name" …` statement of a layout.
    func indexStatements(of layout: any SQLTableLayout) -> [String]
    /// What `ADD COLUMN` takes for `column` (several, when the backend keeps more than one column
    /// per attribute), each with the default given as SQL when there is one.
    func columnDefinitions(_ column: TableLayout.Column, default: String?) -> [String]
    /// The stored columns of an attribute or foreign key: its own, and any the backend keeps
    /// beside it (PostgreSQL's folded strings), as (name, the suffix after the attribute's name).
    func storedColumns(_ column: TableLayout.Column) -> [String]
    /// The columns and values that set `column` to `value` (with the backend's columns beside it).
    func assignments(_ column: TableLayout.Column, _ value: Value) -> [(String, Value)]
    /// `value` as an SQL constant for a column's `DEFAULT`; nil when it cannot be one (or when
    /// columns beside it would need defaults of their own).
    func constant(_ value: Value, for column: TableLayout.Column) -> String?
    /// The metadata tables: key sequences and history changes.
    var sequenceTable: String { get }
    var changeTable: String { get }
}

extension RelationalMigrationTarget {
    package func execute(_ sql: String) throws {
        try run(sql, [])
    }
}

/// Changes a relational store's tables from one schema's layout to another's, inside the
/// writer's transaction, as ``SchemaChanges`` say (the plan has checked the data first), for
/// SQLite and PostgreSQL alike. Renames are `ALTER TABLE … RENAME`, so no row is rewritten for
/// them; an added attribute is `ADD COLUMN` with the default as the column's default, which both
/// read for existing rows without writing them; a removed one is `DROP COLUMN`. Indexes whose
/// statement changes are dropped first and made again last; the others stay as they are.
package struct RelationalMigration {
    let old: any SQLTableLayout
    let new: any SQLTableLayout
    let changes: SchemaChanges
    let connection: any RelationalMigrationTarget

    /// New entity name by old one, for every entity that continues.
    private let continued: [String: String]

    package init(
        old: any SQLTableLayout, new: any SQLTableLayout, changes: SchemaChanges, target: any RelationalMigrationTarget
    ) {
        self.old = old
        self.new = new
        self.changes = changes
        self.connection = target
        continued = Dictionary(changes.entities.map { ($0.oldName, $0.name) }, uniquingKeysWith: { a, _ in a })
    }

    package func run() throws {
        let oldIndexes = indexStatements(old), newIndexes = indexStatements(new)
        for (name, statement) in oldIndexes where newIndexes[name] != statement {
            try connection.execute("DROP INDEX IF EXISTS \(SQL.quote(name))")
        }
        try keepRetiredNamesKeys()
        try migrateTables()
        try migrateJoinTables()
        try clearDanglingReferences()
        for (name, statement) in newIndexes.sorted(by: { $0.key < $1.key }) where oldIndexes[name] != statement {
            try connection.execute(statement)
        }
        try renameInHistory()
    }

    /// Every `CREATE [UNIQUE] INDEX` statement of a layout, by index name.
    private func indexStatements(_ layout: any SQLTableLayout) -> [String: String] {
        var statements: [String: String] = [:]
        for statement in connection.indexStatements(of: layout) {
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
                try connection.execute(connection.createTable(table))
                continue
            }
            kept.insert(oldRoot)
            let before = old.table(root: oldRoot)
            if oldRoot != table.name {
                try connection.execute("ALTER TABLE \(before.quoted) RENAME TO \(table.quoted)")
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
        let newColumns = Dictionary(table.columns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var present = Set<String>()
        for column in before.columns {
            let name = renamed[column.name] ?? column.name
            if let kept = newColumns[name] {
                if name != column.name {
                    for (from, to) in zip(connection.storedColumns(column), connection.storedColumns(kept)) {
                        try connection.execute(
                            "ALTER TABLE \(table.quoted) RENAME COLUMN \(SQL.quote(from)) TO \(SQL.quote(to))")
                    }
                }
                present.insert(name)
            } else {
                for stored in connection.storedColumns(column) {
                    try connection.execute("ALTER TABLE \(table.quoted) DROP COLUMN \(SQL.quote(stored))")
                }
            }
        }
        // Objects of entities that go: deleted with their rows.
        let removed = changes.removedEntities.filter { before.entities.contains($0) }
        if !removed.isEmpty {
            try connection.execute(
                "DELETE FROM \(table.quoted) WHERE \"_entity\" IN (\(removed.map(SQL.literal).joined(separator: ", ")))"
            )
        }
        for rename in changes.renamedEntities where before.entities.contains(rename.old) {
            try connection.run(
                "UPDATE \(table.quoted) SET \"_entity\" = \(p(1)) WHERE \"_entity\" = \(p(2))",
                [.string(rename.new), .string(rename.old)])
        }
        for column in table.columns where !present.contains(column.name) {
            try addColumn(column, to: table)
        }
        // An attribute added where another entity of the hierarchy had a column of its name.
        for column in table.columns where present.contains(column.name) {
            for (value, scope) in defaultFills(of: column.name, in: table) {
                try fill(column, of: table, with: value, in: scope, onlyNil: false)
            }
        }
        for entity in changes.entities where table.entities.contains(entity.name) {
            for attribute in entity.requiredAttributes {
                guard let value = attribute.defaultValue, let scope = new.schema[entity.name]?.descendants,
                    let column = table.columns.first(where: { $0.name == attribute.name })
                else {
                    continue
                }
                try fill(column, of: table, with: value, in: scope, onlyNil: true)
            }
        }
    }

    /// Adds `column`; existing objects of the entities that declare it with a default get the
    /// default, others nil. One default for all of them is the column's `DEFAULT`, which the
    /// database reads for the existing rows without writing them.
    private func addColumn(_ column: TableLayout.Column, to table: TableLayout) throws {
        let fills = defaultFills(of: column.name, in: table)
        guard fills.count == 1, let (value, scope) = fills.first, let literal = connection.constant(value, for: column)
        else {
            for definition in connection.columnDefinitions(column, default: nil) {
                try connection.execute("ALTER TABLE \(table.quoted) ADD COLUMN \(definition)")
            }
            for (value, scope) in fills { try fill(column, of: table, with: value, in: scope, onlyNil: false) }
            return
        }
        for definition in connection.columnDefinitions(column, default: literal) {
            try connection.execute("ALTER TABLE \(table.quoted) ADD COLUMN \(definition)")
        }
        // Rows of the hierarchy's other entities have no such attribute: nil, as before.
        let others = table.entities.filter { !scope.contains($0) }
        if !others.isEmpty {
            let sets = connection.storedColumns(column).map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ")
            try connection.execute(
                "UPDATE \(table.quoted) SET \(sets) WHERE \"_entity\" IN (\(others.map(SQL.literal).joined(separator: ", ")))"
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
    private func fill(
        _ column: TableLayout.Column, of table: TableLayout, with value: Value, in entities: [String], onlyNil: Bool
    ) throws {
        let assignments = connection.assignments(column, value)
        let sets = assignments.enumerated().map { "\(SQL.quote($1.0)) = \(p($0 + 1))" }.joined(separator: ", ")
        let nilOnly = onlyNil ? "\(SQL.quote(column.name)) IS NULL AND " : ""
        try connection.run(
            "UPDATE \(table.quoted) SET \(sets) WHERE \(nilOnly)\"_entity\" IN (\(entities.map(SQL.literal).joined(separator: ", ")))",
            assignments.map(\.1))
    }

    /// The target's `index`th placeholder.
    private func p(_ index: Int) -> String { connection.placeholder(index) }

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
                try connection.execute(connection.createJoinTable(join.name))
            }
        }
        for join in old.schema.joinTables where !kept.contains(join.name) {
            try connection.execute("DROP TABLE IF EXISTS \(SQL.quote(join.name))")
        }
        // Rows whose objects were deleted with their entity.
        guard !changes.removedEntities.isEmpty else { return }
        for join in new.schema.joinTables {
            try connection.execute(
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
                try connection.execute(
                    "UPDATE \(table.quoted) SET \(SQL.quote(column.name)) = NULL WHERE \(SQL.quote(column.name)) NOT IN (SELECT \"_pk\" FROM \(SQL.quote(root)))"
                )
            }
        }
    }

    /// Sequence rows raised so that no name draws a key it drew before (``RetiredNameKeys``).
    private func keepRetiredNamesKeys() throws {
        for raise in RetiredNameKeys.raises(from: old.schema, to: new.schema, changes: changes) {
            try keepAtLeast(raise.name, keysOf: raise.keysOf)
        }
    }

    /// Raises the sequence row `name` to row `source`'s value, making it when there is none.
    private func keepAtLeast(_ name: String, keysOf source: String) throws {
        try connection.run(
            "INSERT INTO \(connection.sequenceTable) AS s (\"name\", \"value\") SELECT \(p(1)), \"value\" FROM \(connection.sequenceTable) WHERE \"name\" = \(p(2)) ON CONFLICT (\"name\") DO UPDATE SET \"value\" = CASE WHEN excluded.\"value\" > s.\"value\" THEN excluded.\"value\" ELSE s.\"value\" END",
            [.string(name), .string(source)])
    }

    /// History names objects by entity: a renamed entity's past changes name it by its new name.
    private func renameInHistory() throws {
        for rename in changes.renamedEntities {
            try connection.run(
                "UPDATE \(connection.changeTable) SET \"entity\" = \(p(1)) WHERE \"entity\" = \(p(2))",
                [.string(rename.new), .string(rename.old)])
        }
    }
}
