import Foundation
import ModelCore
import ModelStorage

/// Answers reads as if a change set were saved, without writing to the store: inside a reader's
/// read transaction the change set (laid out as ``OverlayContent``) goes into TEMP tables, and a
/// `WITH` clause shadows each table it changes with the stored rows minus the changed ones plus
/// the overlay's rows. The very same compiled statement then runs against that view.
enum OverlayTables {
    static func rows(_ root: String) -> String { "temp." + SQL.quote("_overlay_rows_\(root)") }
    static func hidden(_ root: String) -> String { "temp." + SQL.quote("_overlay_hidden_\(root)") }
    static func deleted(_ root: String) -> String { "temp." + SQL.quote("_overlay_deleted_\(root)") }
    static func added(_ join: String) -> String { "temp." + SQL.quote("_overlay_added_\(join)") }
    static func removed(_ join: String) -> String { "temp." + SQL.quote("_overlay_removed_\(join)") }

    /// Fills the TEMP tables with `plan` (checked as an overlay) and returns the overlay to read
    /// through.
    static func install(_ plan: ChangeSetPlan, layout: SQLiteLayout, connection: SQLiteConnection) throws -> Overlay {
        try createTables(layout, connection)
        let content = try OverlayContent(plan) { try StoreMetadata.sequence($0, connection) }
        var overlay = Overlay()
        overlay.temporaryKeys = content.temporaryKeys
        overlay.temporaryIDs = content.temporaryIDs
        for insert in content.inserts {
            let values = Dictionary(uniqueKeysWithValues: insert.columns)
            let statement = layout.insertStatement(for: insert.entity, into: rows(insert.root))
            try connection.run(
                statement.sql,
                [.int(insert.key), .string(insert.entity.name), .int(1)] + statement.columns.map { values[$0] ?? .null }
            )
        }
        for update in content.updates {
            let root = update.root
            try connection.run(
                "INSERT OR IGNORE INTO \(rows(root)) SELECT * FROM main.\(SQL.quote(root)) WHERE \"_pk\" = ?1",
                [.int(update.key)])
            try connection.run("INSERT OR IGNORE INTO \(hidden(root)) VALUES (?1)", [.int(update.key)])
            let version = "\"_version\" = (SELECT \"_version\" FROM main.\(SQL.quote(root)) WHERE \"_pk\" = ?1) + 1"
            let sets = update.columns.enumerated().map { "\(SQL.quote($1.0)) = ?\($0 + 2)" } + [version]
            try connection.run(
                "UPDATE \(rows(root)) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                [.int(update.key)] + update.columns.map(\.1))
        }
        for (table, pairs) in content.joinRows {
            for (pair, present) in pairs {
                try connection.run(
                    "INSERT OR IGNORE INTO \(present ? added(table) : removed(table)) VALUES (?1, ?2)",
                    [.int(pair.source), .int(pair.target)])
            }
        }
        for ref in content.deletes {
            try connection.run("DELETE FROM \(rows(ref.root)) WHERE \"_pk\" = ?1", [.int(ref.key)])
            try connection.run("INSERT OR IGNORE INTO \(hidden(ref.root)) VALUES (?1)", [.int(ref.key)])
            try connection.run("INSERT OR IGNORE INTO \(deleted(ref.root)) VALUES (?1)", [.int(ref.key)])
        }
        let changedRoots = content.changedRoots, deletedRoots = content.deletedRoots
        let changedJoins = Set(content.joinRows.keys)

        var shadows: [String] = []
        for root in changedRoots {
            let table = SQL.quote(root)
            shadows.append(
                """
                \(table) AS NOT MATERIALIZED (SELECT * FROM main.\(table) WHERE "_pk" NOT IN (SELECT "pk" FROM \(hidden(root))) \
                UNION ALL SELECT * FROM \(rows(root)))
                """)
            overlay.filledTables += [rows(root), hidden(root), deleted(root)]
        }
        for join in layout.schema.joinTables
        where changedJoins.contains(join.name) || deletedRoots.contains(join.sourceRoot)
            || deletedRoots.contains(join.targetRoot)
        {
            let table = SQL.quote(join.name)
            let alive = { (alias: String) in
                "\(alias).\"source\" NOT IN (SELECT \"pk\" FROM \(deleted(join.sourceRoot))) AND \(alias).\"target\" NOT IN (SELECT \"pk\" FROM \(deleted(join.targetRoot)))"
            }
            shadows.append(
                """
                \(table) AS NOT MATERIALIZED (SELECT o."source", o."target" FROM main.\(table) AS o WHERE \(alive("o")) \
                AND NOT EXISTS (SELECT 1 FROM \(removed(join.name)) AS r WHERE r."source" = o."source" AND r."target" = o."target") \
                UNION ALL SELECT a."source", a."target" FROM \(added(join.name)) AS a WHERE \(alive("a")) \
                AND NOT EXISTS (SELECT 1 FROM main.\(table) AS m WHERE m."source" = a."source" AND m."target" = a."target"))
                """)
            overlay.filledTables += [added(join.name), removed(join.name)]
        }
        if !shadows.isEmpty { overlay.prefix = "WITH " + shadows.joined(separator: ", ") + " " }
        return overlay
    }

    /// Empties the TEMP tables an overlay filled.
    static func clear(_ overlay: Overlay, connection: SQLiteConnection) throws {
        for table in overlay.filledTables { try connection.run("DELETE FROM \(table)") }
    }

    /// Creates the TEMP tables for `layout` on this connection, once per schema.
    private static func createTables(_ layout: SQLiteLayout, _ connection: SQLiteConnection) throws {
        guard connection.overlaySchemaHash != layout.schema.versionHash else { return }
        var existing: [String] = []
        try connection.query(
            "SELECT name FROM temp.sqlite_master WHERE type = 'table' AND name LIKE '\\_overlay\\_%' ESCAPE '\\'"
        ) {
            existing.append($0.text(0))
        }
        for name in existing { try connection.execute("DROP TABLE temp.\(SQL.quote(name))") }
        for table in layout.tables {
            try connection.execute(
                "CREATE TEMP TABLE \(SQL.quote("_overlay_rows_\(table.name)")) (\(try storedColumns(table, connection)))"
            )
            for name in ["_overlay_hidden_\(table.name)", "_overlay_deleted_\(table.name)"] {
                try connection.execute("CREATE TEMP TABLE \(SQL.quote(name)) (\"pk\" INTEGER PRIMARY KEY)")
            }
        }
        for join in layout.schema.joinTables {
            for name in ["_overlay_added_\(join.name)", "_overlay_removed_\(join.name)"] {
                try connection.execute(
                    "CREATE TEMP TABLE \(SQL.quote(name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID"
                )
            }
        }
        connection.clearCache()
        connection.overlaySchemaHash = layout.schema.versionHash
    }

    /// The columns of `table` as the file lays them out: the overlay's rows are copied from the
    /// stored ones and read beside them with `SELECT *`, which pairs columns by position, and a
    /// column a migration added is last in the file wherever the layout lists it.
    private static func storedColumns(_ table: TableLayout, _ connection: SQLiteConnection) throws -> String {
        var columns: [String] = []
        try connection.query("SELECT name, type FROM pragma_table_info(?1, 'main')", [.string(table.name)]) {
            let name = $0.text(0)
            columns.append(name == "_pk" ? "\"_pk\" INTEGER PRIMARY KEY" : "\(SQL.quote(name)) \($0.text(1))")
        }
        return columns.isEmpty ? SQLiteLayout.columnDefinitions(table) : columns.joined(separator: ", ")
    }
}
