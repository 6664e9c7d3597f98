import Foundation
import ModelCore
import ModelRemote
import ModelTesting

extension BenchCommand {
    /// 11: a migration of every row: an attribute with a default (`rank: int = 5`) and an index
    /// on it, added to the items store through ApplySchema, against the same change made
    /// directly on SQLite (`ALTER TABLE … ADD COLUMN … DEFAULT`, `CREATE INDEX`), alternated;
    /// each round ends by taking the change back, untimed. The target: at least 0.5x SQLite's
    /// speed. Runs last: it changes the items store's schema while it runs.
    func migrationWorkload(
        _ workloads: ModeldWorkloads, sqlite: SQLiteBaseline, daemon: any BenchDaemon, report: inout Report
    )
        async throws
    {
        say("11. adding an attribute with a default and an index to \(rows) objects (\(rounds) alternated rounds)")
        let original = try Dataset.schema()
        var ranked = original
        ranked.entities[0].attributes.append(AttributeDescription(name: "rank", type: .int, defaultValue: .int(5)))
        ranked.entities[0].indexes.append(["rank"])
        var modeldTimes: [Duration] = [], sqliteTimes: [Duration] = []
        try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
            for round in 0..<rounds {
                let (_, sqliteTime) = try await measure {
                    try sqlite.execute(
                        "BEGIN IMMEDIATE; ALTER TABLE item ADD COLUMN rank INTEGER DEFAULT 5; CREATE INDEX item_rank ON item(rank); COMMIT"
                    )
                }
                let (info, modeldTime) = try await measure {
                    try await client.migrateSchema(of: workloads.store, to: ranked, author: "bench")
                }
                guard info.migrationApplied, info.migration?.steps.count == 2 else {
                    throw BenchError("the migration did not run as planned: \(String(describing: info.migration))")
                }
                sqliteTimes.append(sqliteTime)
                modeldTimes.append(modeldTime)
                say("   round \(round + 1): modeld \(millis(modeldTime)), SQLite \(millis(sqliteTime))")
                try sqlite.execute("DROP INDEX item_rank; ALTER TABLE item DROP COLUMN rank")
                try await client.migrateSchema(of: workloads.store, to: original, allowDataLoss: true, author: "bench")
            }
        }
        let modeld = median(modeldTimes.map(\.seconds)), baseline = median(sqliteTimes.map(\.seconds))
        report.detail("11 migration", ["modeld_s": modeld, "sqlite_s": baseline])
        report.add(
            "11 add attribute + index", modeld: millis(.seconds(modeld)),
            baseline: millis(.seconds(baseline)) + " SQLite",
            ratio: baseline / modeld, target: ">= 0.5x", met: baseline / modeld >= 0.5)
    }
}
