import Foundation
import ModelCore
import ModelStorage

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

    /// Fills the TEMP tables with `plan` (checked as an overlay) and returns the overlay to read
    /// through.
    static func install(_ plan: ChangeSetPlan, layout: SQLiteLayout, connection: SQLiteConnection) throws -> Overlay {
        try createTables(layout, connection)
        var overlay = Overlay()
        var changedRoots: [String] = [], deletedRoots = Set<String>(), changedJoins = Set<String>()
        func touch(_ root: String) { if !changedRoots.contains(root) { changedRoots.append(root) } }

        var keys: [Int64] = []
        var next: [String: Int64] = [:]
        for insert in plan.inserts {
            let root = insert.entity.root
            let key = try (next[root] ?? StoreMetadata.sequence(root, connection)) + 1
            next[root] = key
            keys.append(key)
            if case .temporary(let uuid) = insert.id.key { overlay.temporaryKeys[uuid] = key }
            overlay.temporaryIDs[root, default: [:]][key] = insert.id
        }
        func key(_ participant: ChangeSetPlan.Participant) -> Int64 {
            switch participant {
            case .stored(let ref): ref.key
            case .inserted(let index): keys[index]
            }
        }
        /// Attribute values and stored foreign keys, sorted by column.
        func columns(_ values: [String: Value], _ links: [ChangeSetPlan.Link]) -> [(String, Value)] {
            var columns = values
            for link in links where link.relationship.storage == .foreignKey {
                if case .toOne(let target) = link.kind {
                    columns[link.relationship.name] = target.map { .int(key($0)) } ?? .null
                }
            }
            return columns.sorted { $0.key < $1.key }
        }
        func link(_ owner: Int64, _ links: [ChangeSetPlan.Link]) throws {
            for link in links {
                guard case .joinTable(let table, true) = link.relationship.storage,
                    case .toMany(let added, let removed) = link.kind
                else { continue }
                changedJoins.insert(table.name)
                for target in removed.map(key) {
                    try connection.run(
                        "INSERT OR IGNORE INTO \(Self.removed(table.name)) VALUES (?1, ?2)",
                        [.int(owner), .int(target)])
                    try connection.run(
                        "DELETE FROM \(Self.added(table.name)) WHERE \"source\" = ?1 AND \"target\" = ?2",
                        [.int(owner), .int(target)])
                }
                for target in added.map(key) {
                    try connection.run(
                        "INSERT OR IGNORE INTO \(Self.added(table.name)) VALUES (?1, ?2)", [.int(owner), .int(target)])
                    try connection.run(
                        "DELETE FROM \(Self.removed(table.name)) WHERE \"source\" = ?1 AND \"target\" = ?2",
                        [.int(owner), .int(target)])
                }
            }
        }

        for (index, insert) in plan.inserts.enumerated() {
            let root = insert.entity.root
            touch(root)
            let values = Dictionary(uniqueKeysWithValues: columns(insert.attributes, insert.links))
            let statement = layout.insertStatement(for: insert.entity, into: rows(root))
            try connection.run(
                statement.sql,
                [.int(keys[index]), .string(insert.entity.name), .int(1)]
                    + statement.columns.map { values[$0] ?? .null })
        }
        for update in plan.updates {
            let root = update.ref.root
            touch(root)
            try connection.run(
                "INSERT OR IGNORE INTO \(rows(root)) SELECT * FROM main.\(SQL.quote(root)) WHERE \"_pk\" = ?1",
                [.int(update.ref.key)])
            try connection.run("INSERT OR IGNORE INTO \(hidden(root)) VALUES (?1)", [.int(update.ref.key)])
            let assignments = columns(update.attributes, update.links)
            let version = "\"_version\" = (SELECT \"_version\" FROM main.\(SQL.quote(root)) WHERE \"_pk\" = ?1) + 1"
            let sets = assignments.enumerated().map { "\(SQL.quote($1.0)) = ?\($0 + 2)" } + [version]
            try connection.run(
                "UPDATE \(rows(root)) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                [.int(update.ref.key)] + assignments.map(\.1))
        }
        for (index, insert) in plan.inserts.enumerated() { try link(keys[index], insert.links) }
        for update in plan.updates { try link(update.ref.key, update.links) }
        for ref in plan.deletes {
            touch(ref.root)
            deletedRoots.insert(ref.root)
            try connection.run("DELETE FROM \(rows(ref.root)) WHERE \"_pk\" = ?1", [.int(ref.key)])
            try connection.run("INSERT OR IGNORE INTO \(hidden(ref.root)) VALUES (?1)", [.int(ref.key)])
            try connection.run("INSERT OR IGNORE INTO \(deleted(ref.root)) VALUES (?1)", [.int(ref.key)])
        }

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
                "CREATE TEMP TABLE \(SQL.quote("_overlay_rows_\(table.name)")) (\(SQLiteLayout.columnDefinitions(table)))"
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
}
