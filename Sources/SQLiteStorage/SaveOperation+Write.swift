import ModelCore
import ModelStorage

extension SaveOperation {
    /// Runs the SQL of `writes`: deletes (with their join-table rows), updates (the unique
    /// columns they change cleared first, so values moving between objects don't trip a unique
    /// index halfway), inserts, then join-table rows.
    func apply(_ writes: SaveWrites) throws {
        for (ref, _) in writes.deletes {
            let table = layout.table(root: ref.root)
            try connection.run("DELETE FROM \(table.quoted) WHERE \"_pk\" = ?1", [.int(ref.key)])
            for join in schema.joinTables {
                if join.sourceRoot == ref.root {
                    try connection.run("DELETE FROM \(SQL.quote(join.name)) WHERE \"source\" = ?1", [.int(ref.key)])
                }
                if join.targetRoot == ref.root {
                    try connection.run("DELETE FROM \(SQL.quote(join.name)) WHERE \"target\" = ?1", [.int(ref.key)])
                }
            }
        }
        for update in writes.updated {
            let unique = Set(update.entity.uniqueConstraints.flatMap { $0 })
            let clearing = update.values.keys.filter(unique.contains).sorted()
            guard !clearing.isEmpty else { continue }
            try connection.run(
                "UPDATE \(layout.table(root: update.ref.root).quoted) SET \(clearing.map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                [.int(update.ref.key)])
        }
        for update in writes.updated {
            let columns = update.values.sorted { $0.key < $1.key }
            let sets =
                columns.enumerated().map { "\(SQL.quote($1.key)) = ?\($0 + 2)" } + ["\"_version\" = \"_version\" + 1"]
            try connection.run(
                "UPDATE \(layout.table(root: update.ref.root).quoted) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                [.int(update.ref.key)] + columns.map(\.value))
        }
        // One statement per run of inserts of one entity (a whole batch, usually).
        var rest = writes.inserted[...]
        while let first = rest.first {
            let end = rest.firstIndex { $0.entity != first.entity } ?? rest.endIndex
            let run = rest[..<end]
            rest = rest[end...]
            guard let entity = schema[first.entity] else { continue }
            let (sql, columns) = layout.insertStatement(for: entity)
            try connection.runEach(sql, over: run) { insert, statement in
                try statement.bind(.int(insert.ref.key), at: 1)
                try statement.bind(.string(insert.entity), at: 2)
                try statement.bind(.int(1), at: 3)
                for (offset, column) in columns.enumerated() {
                    try statement.bind(insert.values[column] ?? .null, at: Int32(offset + 4))
                }
            }
        }
        let deleted = Set(writes.deletes.map(\.ref))
        for join in writes.joins where !deleted.contains(join.source) && !deleted.contains(join.target) {
            let sql =
                join.present
                ? "INSERT OR IGNORE INTO \(SQL.quote(join.table)) VALUES (?1, ?2)"
                : "DELETE FROM \(SQL.quote(join.table)) WHERE \"source\" = ?1 AND \"target\" = ?2"
            try connection.run(sql, [.int(join.source.key), .int(join.target.key)])
        }
    }
}
