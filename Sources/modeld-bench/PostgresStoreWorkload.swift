import Foundation
import ModelCore
import ModelRemote
import ModelTesting

extension BenchCommand {
    /// 12: a PostgreSQL store served by modeld, beside pgbench's raw figures on the same cluster
    /// and the very table the store keeps (so both read the same rows through the same index):
    /// point reads at 1 and 16 clients, durable saves at 32 clients, the indexed query (pgbench's
    /// spelled as modeld's store compiles it: nil first ascending, which its index is declared for).
    func postgresStoreWorkload(postgres: PostgresCluster, daemon: any BenchDaemon, report: inout Report) async throws {
        let count = min(rows, postgresStoreRows)
        // The cluster's socket directory as the daemon sees it (BenchDaemon.swift).
        let host = installed ? "/run/postgresql" : postgres.socketDirectory
        let server = "postgres:///postgres?host=\(host)&user=postgres"
        let schema = try Dataset.schema()
        let info = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
            try await $0.createStore(
                "pg-items", backend: nil, url: server + "&schema=bench_items&pool_size=16", schema: schema)
        }
        _ = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
            try await $0.createStore("pg-saves", backend: nil, url: server + "&schema=bench_saves", schema: schema)
        }
        let workloads = ModeldWorkloads(
            socketPath: daemon.socketPath, storeIdentifier: info.storeIdentifier, store: "pg-items")
        say("12. a PostgreSQL store through modeld: loading \(count) rows…")
        var loaded = 0, loading = Duration.zero
        while loaded < count {
            let next = min(count, loaded + 10_000)
            loading += try await workloads.insert((loaded + 1)...next)
            loaded = next
        }
        try postgresBulkLoad(count, modeld: loading, postgres: postgres, report: &report)
        try postgres.psql("ANALYZE bench_items.\"Item\"; CREATE TABLE pg_saves (LIKE item INCLUDING ALL);")
        let table = "bench_items.\"Item\""
        let reads = """
            \\set id random(1, \(count))
            SELECT name, category, score, price, created FROM \(table) WHERE "_pk" = :id;
            """
        let query = """
            \\set lo random(0, 989999)
            SELECT name, category, score, price, created FROM \(table) WHERE score >= :lo ORDER BY score ASC NULLS FIRST LIMIT 50;
            """
        let saves = """
            \\set n random(1, 1000000)
            INSERT INTO pg_saves(name, category, score, price, created) VALUES ('item-' || :n, 'c1', :n, 1.5, now());
            """
        var read1: [(Double, Double)] = [], read16: [(Double, Double)] = [], save32: [(Double, Double)] = []
        var queries: [(Double, Double)] = []
        for round in 0..<max(1, rounds - 1) {
            let (one, costs) = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await workloads.pointReads(200, rows: count, client: client, seed: 1)
                let before = ProcessStats.of(daemon.processIdentifier)
                let (_, elapsed) = try await measure {
                    try await workloads.pointReads(2_000, rows: count, client: client, seed: UInt64(round + 2))
                }
                let after = ProcessStats.of(daemon.processIdentifier)
                return (
                    2_000 / elapsed.seconds,
                    (
                        wakeUps: Double(ProcessStats.wakeUps(from: before, to: after)) / 2_000,
                        cpu: (after.cpuSeconds - before.cpuSeconds) / 2_000
                    )
                )
            }
            say(
                "   per point read (1 client), modeld's daemon: \(format(costs.wakeUps)) wake-ups, \(micros(costs.cpu * 1e6)) CPU"
            )
            read1.append(
                (one, try postgres.pgbench(script: reads, clients: 1, seconds: Int(seconds)).transactionsPerSecond))
            let sixteen = try await workloads.concurrentPointReads(clients: 16, seconds: seconds, rows: count).rate
            read16.append(
                (sixteen, try postgres.pgbench(script: reads, clients: 16, seconds: Int(seconds)).transactionsPerSecond)
            )
            let saved = try await workloads.smallSaves(clients: 32, seconds: seconds, into: "pg-saves").rate
            save32.append(
                (saved, try postgres.pgbench(script: saves, clients: 32, seconds: Int(seconds)).transactionsPerSecond))
            let queried = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await workloads.indexedQueries(50, client: client)
                let (_, elapsed) = try await measure { try await workloads.indexedQueries(500, client: client) }
                return 500 / elapsed.seconds
            }
            queries.append(
                (queried, try postgres.pgbench(script: query, clients: 1, seconds: Int(seconds)).transactionsPerSecond))
            say(
                "   round \(round + 1): modeld / PostgreSQL: reads 1 client \(perSecond(one)) / \(perSecond(read1.last!.1)), 16 clients \(perSecond(sixteen)) / \(perSecond(read16.last!.1)), saves 32 clients \(perSecond(saved)) / \(perSecond(save32.last!.1)), indexed query \(perSecond(queried)) / \(perSecond(queries.last!.1))"
            )
        }
        func add(_ name: String, _ pairs: [(Double, Double)], target: Double?) {
            let modeld = median(pairs.map(\.0)), raw = median(pairs.map(\.1))
            report.detail(name, ["modeld_per_s": modeld, "postgres_per_s": raw])
            report.add(
                name, modeld: perSecond(modeld), baseline: perSecond(raw) + " PostgreSQL", ratio: modeld / raw,
                target: target.map { ">= \(format($0))x" } ?? "-", met: target.map { modeld / raw >= $0 })
        }
        add("12 PostgreSQL store: point read, 1 client", read1, target: 0.7)
        add("12 PostgreSQL store: point reads, 16 clients", read16, target: 0.7)
        add("12 PostgreSQL store: durable saves, 32 clients", save32, target: nil)
        add("12 PostgreSQL store: indexed query, 1 client", queries, target: nil)
    }

    /// Reports the load just made (`count` objects in saves of 10,000, taking `modeld`) against
    /// PostgreSQL's own bulk path for the same rows: `COPY` from a CSV file, through `psql`.
    private func postgresBulkLoad(_ count: Int, modeld: Duration, postgres: PostgresCluster, report: inout Report)
        throws
    {
        let csv = postgres.directory.appendingPathComponent("load.csv")
        defer { try? FileManager.default.removeItem(at: csv) }
        let time = ISO8601DateFormatter()
        try (1...count).map { i in
            let row = Dataset.row(i)
            return "\(i),\(row.name),\(row.category),\(row.score),\(row.price),\(time.string(from: row.created))"
        }.joined(separator: "\n").write(to: csv, atomically: true, encoding: .utf8)
        _ = try postgres.psql("CREATE TABLE pg_load (LIKE item INCLUDING ALL);")
        let started = ContinuousClock.now
        _ = try postgres.psql(
            "\\copy pg_load(id, name, category, score, price, created) FROM '\(csv.path)' WITH (FORMAT csv)")
        let copy = ContinuousClock.now - started
        let modeldRate = Double(count) / modeld.seconds, copyRate = Double(count) / copy.seconds
        report.detail("12 PostgreSQL store bulk load", ["modeld_per_s": modeldRate, "copy_per_s": copyRate])
        report.add(
            "12 PostgreSQL store: bulk load", modeld: perSecond(modeldRate),
            baseline: perSecond(copyRate) + " COPY", ratio: modeldRate / copyRate, target: "-", met: nil)
    }
}
