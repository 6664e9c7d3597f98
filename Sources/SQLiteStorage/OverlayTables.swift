import Foundation
import ModelCore

/// Answers reads as if a change set were saved, without writing to the store: inside a reader's
/// read transaction the change set goes into TEMP tables, and a `WITH` clause shadows each table
/// it changes with the stored rows minus the changed ones plus the overlay's rows. The very same
/// compiled statement then runs against that view. Inserted objects get the keys a save would
/// give them (after the hierarchy's sequence, in change-set order); updated objects are their
/// stored row with the changes applied and the version grown by one.
enum OverlayTables {
    static func rows(_ root: String) -> String { "temp." + SQL.quote("_overlay_rows_\(root)") }
    static func hidden(_ root: String) -> String { "temp." + SQL.quote("_overlay_hidden_\(root)") }
    static func deleted(_ root: String) -> String { "temp." + SQL.quote("_overlay_deleted_\(root)") }
    static func added(_ join: String) -> String { "temp." + SQL.quote("_overlay_added_\(join)") }
    static func removed(_ join: String) -> String { "temp." + SQL.quote("_overlay_removed_\(join)") }

    /// Fills the TEMP tables with `plan` and returns the overlay to read through.
    static func install(_ plan: ChangeSetPlan, layout: SQLiteLayout, connection: SQLiteConnection) throws -> Overlay {
        try createTables(layout, connection)
        var overlay = Overlay()
        var changedRoots: [String] = [], deletedRoots = Set<String>(), changedJoins = Set<String>()
        func touch(_ root: String) { if !changedRoots.contains(root) { changedRoots.append(root) } }

        var next: [String: Int64] = [:]
        for insert in plan.inserts {
            let root = insert.entity.root
            let key = try (next[root] ?? StoreMetadata.sequence(root, connection)) + 1
            next[root] = key
            guard case .temporary(let uuid) = insert.id.key else { continue }
            overlay.temporaryKeys[uuid] = key
            overlay.temporaryIDs[root, default: [:]][key] = insert.id
        }
        func key(_ id: PersistentIdentifier) -> Int64? {
            switch id.key {
            case .permanent(let key): key
            case .temporary(let uuid): overlay.temporaryKeys[uuid]
            }
        }
        func assignments(_ values: [String: Value], _ links: ChangeSetPlan.Links) -> [(String, Value)] {
            values.sorted { $0.key < $1.key } + links.foreignKeys.map { ($0.name, $0.target.flatMap(key).map(Value.int) ?? .null) }
        }
        func link(_ owner: Int64, _ links: ChangeSetPlan.Links) throws {
            for (table, added, removed) in links.joins {
                changedJoins.insert(table.name)
                for target in added.compactMap(key) {
                    try connection.run("INSERT OR IGNORE INTO \(Self.added(table.name)) VALUES (?1, ?2)", [.int(owner), .int(target)])
                    try connection.run("DELETE FROM \(Self.removed(table.name)) WHERE \"source\" = ?1 AND \"target\" = ?2", [.int(owner), .int(target)])
                }
                for target in removed.compactMap(key) {
                    try connection.run("INSERT OR IGNORE INTO \(Self.removed(table.name)) VALUES (?1, ?2)", [.int(owner), .int(target)])
                    try connection.run("DELETE FROM \(Self.added(table.name)) WHERE \"source\" = ?1 AND \"target\" = ?2", [.int(owner), .int(target)])
                }
            }
        }

        for insert in plan.inserts {
            guard let owner = key(insert.id) else { continue }
            let root = insert.entity.root
            touch(root)
            let columns = [("_pk", Value.int(owner)), ("_entity", .string(insert.entity.name)), ("_version", .int(1))]
                + assignments(insert.values, insert.links)
            let names = columns.map { SQL.quote($0.0) }.joined(separator: ", ")
            let parameters = (1...columns.count).map { "?\($0)" }.joined(separator: ", ")
            try connection.run("INSERT INTO \(rows(root)) (\(names)) VALUES (\(parameters))", columns.map(\.1))
            try link(owner, insert.links)
        }
        for update in plan.updates {
            guard let owner = key(update.id) else { continue }
            let root = update.entity.root
            touch(root)
            var sets = assignments(update.values, update.links).enumerated().map { "\(SQL.quote($1.0)) = ?\($0 + 2)" }
            if !update.id.isTemporary {
                try connection.run("INSERT OR IGNORE INTO \(rows(root)) SELECT * FROM main.\(SQL.quote(root)) WHERE \"_pk\" = ?1", [.int(owner)])
                try connection.run("INSERT OR IGNORE INTO \(hidden(root)) VALUES (?1)", [.int(owner)])
                sets.append("\"_version\" = \"_version\" + 1")
            }
            try connection.run("UPDATE \(rows(root)) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                               [.int(owner)] + assignments(update.values, update.links).map(\.1))
            try link(owner, update.links)
        }
        for delete in plan.deletes {
            guard let owner = key(delete.id) else { continue }
            let root = delete.entity.root
            touch(root)
            deletedRoots.insert(root)
            try connection.run("DELETE FROM \(rows(root)) WHERE \"_pk\" = ?1", [.int(owner)])
            try connection.run("INSERT OR IGNORE INTO \(hidden(root)) VALUES (?1)", [.int(owner)])
            try connection.run("INSERT OR IGNORE INTO \(deleted(root)) VALUES (?1)", [.int(owner)])
        }

        var shadows: [String] = []
        for root in changedRoots {
            let table = SQL.quote(root)
            shadows.append("""
                \(table) AS NOT MATERIALIZED (SELECT * FROM main.\(table) WHERE "_pk" NOT IN (SELECT "pk" FROM \(hidden(root))) \
                UNION ALL SELECT * FROM \(rows(root)))
                """)
            overlay.filledTables += [rows(root), hidden(root), deleted(root)]
        }
        for join in layout.schema.joinTables
            where changedJoins.contains(join.name) || deletedRoots.contains(join.sourceRoot) || deletedRoots.contains(join.targetRoot) {
            let table = SQL.quote(join.name)
            let alive = { (alias: String) in
                "\(alias).\"source\" NOT IN (SELECT \"pk\" FROM \(deleted(join.sourceRoot))) AND \(alias).\"target\" NOT IN (SELECT \"pk\" FROM \(deleted(join.targetRoot)))"
            }
            shadows.append("""
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
        try connection.query("SELECT name FROM temp.sqlite_master WHERE type = 'table' AND name LIKE '\\_overlay\\_%' ESCAPE '\\'") {
            existing.append($0.text(0))
        }
        for name in existing { try connection.execute("DROP TABLE temp.\(SQL.quote(name))") }
        for table in layout.tables {
            try connection.execute("CREATE TEMP TABLE \(SQL.quote("_overlay_rows_\(table.name)")) (\(SQLiteLayout.columnDefinitions(table)))")
            for name in ["_overlay_hidden_\(table.name)", "_overlay_deleted_\(table.name)"] {
                try connection.execute("CREATE TEMP TABLE \(SQL.quote(name)) (\"pk\" INTEGER PRIMARY KEY)")
            }
        }
        for join in layout.schema.joinTables {
            for name in ["_overlay_added_\(join.name)", "_overlay_removed_\(join.name)"] {
                try connection.execute("CREATE TEMP TABLE \(SQL.quote(name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID")
            }
        }
        connection.clearCache()
        connection.overlaySchemaHash = layout.schema.versionHash
    }
}
