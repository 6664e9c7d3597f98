import Foundation
import ModelCore
import ModelStorage

/// Answers reads as if a change set were saved, without writing to the store, as the SQLite
/// backend does: inside the read's transaction (rolled back afterwards) the change set, laid out
/// as ``OverlayContent``, goes into temporary tables dropped with the transaction, and a `WITH`
/// clause shadows each table it changes with the stored rows minus the changed ones plus the
/// overlay's rows. Compiled statements name tables without their namespace, so the very same
/// statement then runs against that view.
enum PostgresOverlay {
    /// What reads need of an installed overlay.
    struct Installed {
        /// `WITH "Trip" AS (…), … ` or "".
        var prefix = ""
        var temporaryKeys: [UUID: Int64] = [:]
        var temporaryIDs: [String: [Int64: PersistentIdentifier]] = [:]
    }

    private static func rows(_ root: String) -> String { SQL.quote("_overlay_rows_\(root)") }
    private static func hidden(_ root: String) -> String { SQL.quote("_overlay_hidden_\(root)") }
    private static func deleted(_ root: String) -> String { SQL.quote("_overlay_deleted_\(root)") }
    private static func joinRows(_ join: String, _ present: Bool) -> String {
        SQL.quote("_overlay_\(present ? "added" : "removed")_\(join)")
    }

    /// Checks `changes` as an overlay, fills the temporary tables and returns the overlay. In a
    /// transaction that is rolled back afterwards. The tables are made and filled by statements
    /// sent without waiting for each answer (``PostgresSession/send(_:keys:_:)``): the read that
    /// follows waits for them all, in order, and fails with the first one's error if one failed.
    /// Waited for one at a time, 20,000 staged inserts took a session's count 11 s.
    static func install(
        _ changes: ChangeSet, layout: PostgresLayout, metadata: PostgresMetadata, storeIdentifier: UUID,
        session: PostgresSession
    ) throws -> Installed {
        try ChangeSetPlan.checkIdentifiers(changes, schema: layout.schema, storeIdentifier: storeIdentifier)
        let reads = try PostgresStoredRows(
            for: changes, layout: layout, session: session, metadata: metadata, storeIdentifier: storeIdentifier,
            locking: false)
        let content = try OverlayContent(try ChangeSetPlan(changes, reads: reads, isOverlay: true)) {
            try metadata.sequence($0, session)
        }
        var shadowedRoots = content.changedRoots
        for root in content.deletedRoots where !shadowedRoots.contains(root) { shadowedRoots.append(root) }
        for root in shadowedRoots {
            try session.send("CREATE TEMP TABLE \(rows(root)) (LIKE \(layout.qualified(root))) ON COMMIT DROP")
            for table in [hidden(root), deleted(root)] {
                try session.send("CREATE TEMP TABLE \(table) (\"pk\" bigint PRIMARY KEY) ON COMMIT DROP")
            }
        }
        let joins = layout.schema.joinTables.filter { join in
            content.joinRows[join.name] != nil || content.deletedRoots.contains(join.sourceRoot)
                || content.deletedRoots.contains(join.targetRoot)
        }
        for join in joins {
            for present in [true, false] {
                try session.send(
                    "CREATE TEMP TABLE \(joinRows(join.name, present)) (\"source\" bigint NOT NULL, \"target\" bigint NOT NULL, PRIMARY KEY (\"source\", \"target\")) ON COMMIT DROP"
                )
            }
        }
        try insertRows(content.inserts, session: session)
        // Updated objects: their stored rows copied and hidden, a statement a hierarchy, then
        // each changed in its copy, found by an index when there are many (without one, 10,000
        // updates each read the whole copy: 20,000 changes took a count 22 s).
        for (root, keys) in keysByRoot(content.updates.map { ($0.root, $0.key) }) {
            try session.send(
                "INSERT INTO \(rows(root)) SELECT * FROM \(layout.qualified(root)) WHERE \"_pk\" = ANY($1)", keys: keys)
            try session.send("INSERT INTO \(hidden(root)) SELECT unnest($1::bigint[])", keys: keys)
            if keys.count > 32 { try session.send("CREATE INDEX ON \(rows(root)) (\"_pk\")") }
        }
        for update in content.updates {
            let columns = PostgresLayout.withFoldedForms(update.columns, of: update.entity)
            let sets =
                columns.enumerated().map { "\(SQL.quote($1.0)) = $\($0 + 2)" } + ["\"_version\" = \"_version\" + 1"]
            try session.send(
                "UPDATE \(rows(update.root)) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = $1",
                [.int(update.key)] + columns.map(\.1))
        }
        for (join, pairs) in content.joinRows {
            for present in [true, false] {
                let listed = pairs.filter { $0.value == present }.map {
                    [Value.int($0.key.source), .int($0.key.target)]
                }
                try insertValues(
                    listed, into: joinRows(join, present), columns: "\"source\", \"target\"", session: session)
            }
        }
        for (root, keys) in keysByRoot(content.deletes.map { ($0.root, $0.key) }) {
            try session.send("DELETE FROM \(rows(root)) WHERE \"_pk\" = ANY($1)", keys: keys)
            try session.send(
                "INSERT INTO \(hidden(root)) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING", keys: keys)
            try session.send("INSERT INTO \(deleted(root)) SELECT unnest($1::bigint[])", keys: keys)
        }

        var shadows: [String] = []
        for root in shadowedRoots {
            shadows.append(
                """
                \(SQL.quote(root)) AS NOT MATERIALIZED (SELECT * FROM \(layout.qualified(root)) WHERE "_pk" NOT IN (SELECT "pk" FROM \(hidden(root))) \
                UNION ALL SELECT * FROM \(rows(root)))
                """)
        }
        for join in joins {
            let stored = layout.qualified(join.name)
            func alive(_ alias: String) -> String {
                let sources =
                    content.deletedRoots.contains(join.sourceRoot)
                    ? "\(alias).\"source\" NOT IN (SELECT \"pk\" FROM \(deleted(join.sourceRoot)))" : "TRUE"
                let targets =
                    content.deletedRoots.contains(join.targetRoot)
                    ? "\(alias).\"target\" NOT IN (SELECT \"pk\" FROM \(deleted(join.targetRoot)))" : "TRUE"
                return "\(sources) AND \(targets)"
            }
            let added = content.joinRows[join.name] == nil ? nil : joinRows(join.name, true)
            let removed = joinRows(join.name, false)
            var union = """
                SELECT o."source", o."target" FROM \(stored) AS o WHERE \(alive("o")) \
                AND NOT EXISTS (SELECT 1 FROM \(removed) AS r WHERE r."source" = o."source" AND r."target" = o."target")
                """
            if let added {
                union += """
                     UNION ALL SELECT a."source", a."target" FROM \(added) AS a WHERE \(alive("a")) \
                    AND NOT EXISTS (SELECT 1 FROM \(stored) AS m WHERE m."source" = a."source" AND m."target" = a."target")
                    """
            }
            shadows.append("\(SQL.quote(join.name)) AS NOT MATERIALIZED (\(union))")
        }
        return Installed(
            prefix: shadows.isEmpty ? "" : "WITH " + shadows.joined(separator: ", ") + " ",
            temporaryKeys: content.temporaryKeys, temporaryIDs: content.temporaryIDs)
    }

    /// The parameters an overlay's `INSERT` binds at most (PostgreSQL allows 65,535).
    static let parametersPerStatement = 30_000

    /// Writes the inserted objects' rows, those of one hierarchy with the same columns together
    /// in statements of many rows: one statement an object made 20,000 staged inserts cost a
    /// session's count 9 s, even sent without waiting for each answer.
    private static func insertRows(_ inserts: [OverlayContent.Row], session: PostgresSession) throws {
        var groups: [(table: String, names: [String], rows: [[Value]])] = []
        var positions: [String: Int] = [:]
        for insert in inserts {
            let columns = PostgresLayout.withFoldedForms(insert.columns, of: insert.entity)
            let names = ["_pk", "_entity", "_version"] + columns.map(\.0)
            let table = rows(insert.root)
            let shape = ([table] + names).joined(separator: "\u{0}")
            let row = [Value.int(insert.key), .string(insert.entity.name), .int(1)] + columns.map(\.1)
            if let position = positions[shape] {
                groups[position].rows.append(row)
            } else {
                positions[shape] = groups.count
                groups.append((table, names, [row]))
            }
        }
        for group in groups {
            try insertValues(
                group.rows, into: group.table, columns: group.names.map(SQL.quote).joined(separator: ", "),
                session: session)
        }
    }

    /// Inserts `rows` (each with a value for every column of `columns`) into `table`, in
    /// statements of many rows.
    private static func insertValues(
        _ rows: [[Value]], into table: String, columns: String, session: PostgresSession
    ) throws {
        guard let width = rows.first?.count, width > 0 else { return }
        let perStatement = max(1, parametersPerStatement / width)
        for start in stride(from: 0, to: rows.count, by: perStatement) {
            var values: [String] = [], binds: [Value] = []
            for row in rows[start..<min(start + perStatement, rows.count)] {
                values.append(
                    "(" + (binds.count + 1...binds.count + row.count).map { "$\($0)" }.joined(separator: ", ") + ")")
                binds += row
            }
            try session.send("INSERT INTO \(table) (\(columns)) VALUES \(values.joined(separator: ", "))", binds)
        }
    }

    /// The keys of `objects` by hierarchy, the hierarchies in the order first met.
    private static func keysByRoot(_ objects: [(root: String, key: Int64)]) -> [(String, [Int64])] {
        var keys: [(String, [Int64])] = []
        var positions: [String: Int] = [:]
        for (root, key) in objects {
            if let position = positions[root] {
                keys[position].1.append(key)
            } else {
                positions[root] = keys.count
                keys.append((root, [key]))
            }
        }
        return keys
    }
}
