import Foundation
import ModelCore
import ModelRemote
import ModelTesting

extension BenchCommand {
    static let pointReadScript = """
        \\set id random(1, :rows)
        SELECT name, category, score, price, created FROM item WHERE id = :id;
        """

    /// 2 and 3: point reads, alternating modeld and PostgreSQL round by round.
    func pointReadWorkloads(
        _ workloads: ModeldWorkloads, postgres: PostgresCluster, sqlite: SQLiteBaseline, daemon: any BenchDaemon,
        report: inout Report
    ) async throws {
        say(
            "2. point reads by URI, 1 client (\(rounds) alternated rounds): modeld's blocking client (BlockingDaemonClient, its calls on its thread, as pgbench's libpq), then its async one (DaemonClient, tasks preferring their connection's executor)"
        )
        let script = Self.pointReadScript.replacingOccurrences(of: ":rows", with: "\(rows)")
        var modeldRates: [Double] = [], postgresRates: [Double] = [], asyncRates: [Double] = []
        var modeldLatencies = Latencies(), postgresLatencies = Latencies(), asyncLatencies = Latencies()
        var daemonWakeUps = 0.0, clientWakeUps = 0.0, daemonCPU = 0.0, clientCPU = 0.0
        var postgresCosts = PostgresCosts()
        try await DaemonClient.withClient(socketPath: workloads.socketPath) { client in
            _ = try await workloads.pointReads(200, rows: rows, client: client, seed: 1)
            for round in 0..<rounds {
                let count = 2_000
                let (asynchronous, asyncElapsed) = try await measure {
                    try await workloads.pointReads(count, rows: rows, client: client, seed: UInt64(round + 2))
                }
                asyncRates.append(Double(count) / asyncElapsed.seconds)
                asyncLatencies = asynchronous
                // As long as pgbench's run: a few thousand reads were measured before the
                // scheduler had settled where the new thread runs.
                let daemonBefore = ProcessStats.of(daemon.processIdentifier), clientBefore = ProcessStats.ofSelf()
                let (rate, latencies) = try await workloads.blockingPointReads(
                    seconds: seconds, rows: rows, seed: UInt64(round + 2))
                let daemonAfter = ProcessStats.of(daemon.processIdentifier), clientAfter = ProcessStats.ofSelf()
                let reads = Double(latencies.count + ModeldWorkloads.blockingWarmUpReads)
                daemonWakeUps = Double(ProcessStats.wakeUps(from: daemonBefore, to: daemonAfter)) / reads
                clientWakeUps = Double(ProcessStats.wakeUps(from: clientBefore, to: clientAfter)) / reads
                daemonCPU = (daemonAfter.cpuSeconds - daemonBefore.cpuSeconds) * 1e6 / reads
                clientCPU = (clientAfter.cpuSeconds - clientBefore.cpuSeconds) * 1e6 / reads
                modeldRates.append(rate)
                modeldLatencies = latencies
                let pg = try postgres.pgbench(script: script, clients: 1, seconds: Int(seconds))
                postgresRates.append(pg.transactionsPerSecond)
                postgresLatencies = pg.latencies
                postgresCosts.add(pg)
                say(
                    "   round \(round + 1): modeld \(perSecond(modeldRates.last!)) (async client \(perSecond(asyncRates.last!))), PostgreSQL \(perSecond(pg.transactionsPerSecond))"
                )
            }
        }
        let sqliteReads = try sqlite.pointReads(100_000, rows: rows)
        report.detail(
            "2 point read modeld",
            modeldLatencies.summary.merging([
                "daemon_wakeups_per_call": daemonWakeUps, "client_wakeups_per_call": clientWakeUps,
                "daemon_cpu_us_per_call": daemonCPU, "client_cpu_us_per_call": clientCPU,
            ]) { a, _ in a })
        report.detail(
            "2 point read modeld async client",
            asyncLatencies.summary.merging(["per_second": median(asyncRates)]) { a, _ in a })
        report.detail("2 point read PostgreSQL", postgresLatencies.summary.merging(postgresCosts.summary) { a, _ in a })
        report.detail("2 point read SQLite in-process", sqliteReads.summary)
        let modeld1 = median(modeldRates), postgres1 = median(postgresRates)
        report.add(
            "2 point read, 1 client", modeld: perSecond(modeld1) + " (p50 \(micros(modeldLatencies.percentile(50))))",
            baseline: perSecond(postgres1) + " PostgreSQL", ratio: modeld1 / postgres1, target: ">= 1.0x",
            met: modeld1 >= postgres1)
        say(
            "   per read: daemon \(format(daemonWakeUps)) wake-ups, \(format(daemonCPU)) µs CPU; client \(format(clientWakeUps)) wake-ups, \(format(clientCPU)) µs CPU; PostgreSQL per read: \(postgresCosts.description)"
        )

        // pgbench's 16 connections share 2 threads: so do the async client's, on its 2 event
        // loops. The blocking client's, a thread each, are measured beside.
        say(
            "3. point reads, 16 clients (\(max(1, rounds - 1)) alternated rounds): modeld's async client (16 connections on 2 event loops, as pgbench's on 2 threads), then its blocking one (a thread a connection)"
        )
        modeldRates = []
        postgresRates = []
        var blockingRates: [Double] = []
        var costs = CallCosts(), blockingCosts = CallCosts()
        postgresCosts = PostgresCosts()
        for round in 0..<max(1, rounds - 1) {
            let (blockingRate, blockingLatencies) = try await blockingCosts.measure(
                daemon: daemon, calls: { $0.1.count }
            ) {
                try await workloads.concurrentBlockingPointReads(clients: 16, seconds: seconds, rows: rows)
            }
            report.detail("3 point reads 16 clients modeld blocking client", blockingLatencies.summary)
            blockingRates.append(blockingRate)
            let (rate, pg) = try await concurrentRound(
                "3 point reads 16 clients", clients: 16, script: script, postgres: postgres,
                costs: &costs, postgresCosts: &postgresCosts, daemon: daemon, report: &report
            ) {
                try await workloads.concurrentPointReads(clients: 16, seconds: seconds, rows: rows)
            }
            modeldRates.append(rate)
            postgresRates.append(pg)
            say(
                "   round \(round + 1): modeld \(perSecond(rate)) (blocking client \(perSecond(blockingRate))), PostgreSQL \(perSecond(pg))"
            )
        }
        say(
            "   per read: modeld \(costs.description); its blocking client \(blockingCosts.description); PostgreSQL \(postgresCosts.description)"
        )
        report.detail(
            "3 point reads 16 clients modeld blocking client costs",
            blockingCosts.summary.merging(["per_second": median(blockingRates)]) { a, _ in a })
        report.detail("3 point reads 16 clients modeld costs", costs.summary)
        report.detail("3 point reads 16 clients PostgreSQL costs", postgresCosts.summary)
        let modeld16 = median(modeldRates), postgres16 = median(postgresRates)
        report.add(
            "3 point reads, 16 clients", modeld: perSecond(modeld16), baseline: perSecond(postgres16) + " PostgreSQL",
            ratio: modeld16 / postgres16, target: ">= 1.0x", met: modeld16 >= postgres16)
    }

    /// 4, 5 and 7: the indexed query, the grouped count, the streaming fetch.
    func queryWorkloads(
        _ workloads: ModeldWorkloads, sqlite: SQLiteBaseline, daemon: any BenchDaemon, report: inout Report
    ) async throws {
        say("4. indexed predicate + sort + limit 50 over \(rows) rows")
        var costs = CallCosts(), emptyCosts = CallCosts()
        let (query, roundTrip) = try await DaemonClient.withClient(socketPath: workloads.socketPath) { client in
            _ = try await workloads.indexedQueries(20, client: client)
            var query = Latencies(), roundTrip = Latencies()
            for _ in 0..<rounds {
                query.append(
                    contentsOf: try await costs.measure(200, daemon: daemon) {
                        try await workloads.indexedQueries(200, client: client)
                    })
                roundTrip.append(
                    contentsOf: try await emptyCosts.measure(200, daemon: daemon) {
                        try await workloads.emptyRoundTrips(200, client: client)
                    })
            }
            return (query, roundTrip)
        }
        let local = try sqlite.indexedQueries(1_000)
        let limit = local.percentile(50) + roundTrip.percentile(50)
        report.detail("4 indexed query modeld", query.summary.merging(costs.summary) { a, _ in a })
        say("   per query: \(costs.description)")
        say("   per empty round trip: \(emptyCosts.description)")
        report.detail("4 empty round trip modeld", roundTrip.summary.merging(emptyCosts.summary) { a, _ in a })
        report.detail("4 indexed query SQLite in-process", local.summary)
        report.add(
            "4 indexed query p50", modeld: micros(query.percentile(50)),
            baseline: micros(limit)
                + " (SQLite \(micros(local.percentile(50))) + round trip \(micros(roundTrip.percentile(50))))",
            ratio: query.percentile(50) / limit, target: "<= 2x (lower is better)",
            met: query.percentile(50) <= 2 * limit)

        // A fresh daemon process, so its peak memory is the streaming fetch's.
        say("7. streaming fetch of \(rows) objects (modeld restarted first)")
        try await daemon.restartDaemon()
        let before = ProcessStats.of(daemon.processIdentifier)
        let (objects, groups, streamed) = try await DaemonClient.withClient(socketPath: workloads.socketPath) {
            try await workloads.fetchEverythingAndCount(client: $0)
        }
        let peak = ProcessStats.of(daemon.processIdentifier).peakResidentKB
        let rate = Double(objects) / streamed.seconds
        report.detail(
            "7 streaming fetch",
            [
                "objects_per_s": rate, "daemon_peak_rss_mb": Double(peak) / 1024,
                "daemon_rss_before_mb": Double(before.residentKB) / 1024,
            ])
        report.add(
            "7 streaming \(objects) objects", modeld: "peak RSS \(format(Double(peak) / 1024)) MB",
            baseline: perSecond(rate) + " streamed",
            ratio: Double(peak) / 1024 / 200, target: "< 200 MB (ratio to 200 MB)", met: peak < 200 * 1024)

        say("5. grouped count over \(rows) rows vs fetching everything and counting here")
        let (aggregate, clientSide, sqliteCount) = try await DaemonClient.withClient(
            socketPath: workloads.socketPath
        ) { client in
            // One count first, untimed, as the other workloads warm up: the daemon was just
            // restarted (workload 7), and the first count opens the helpers' connections.
            _ = try await workloads.groupedCount(client: client)
            var times: [Double] = []
            var groupCount = 0
            for _ in 0..<rounds {
                let (found, elapsed) = try await workloads.groupedCount(client: client)
                groupCount = found
                times.append(elapsed.seconds)
            }
            say("   pushed down: " + times.map { format($0 * 1000) + " ms" }.joined(separator: ", "))
            guard groupCount == groups else {
                throw BenchError("the store counted \(groupCount) groups, the client \(groups)")
            }
            // The count fetched and counted here, as many times, right after: warm as the
            // pushed-down counts are (workload 7's fetch, the first after a restart, opened the
            // store). Not between them: a count just after a fetch of every row took up to
            // twice as long.
            var clientSide: [Double] = []
            for _ in 0..<rounds {
                let (fetched, counted, elapsed) = try await workloads.fetchEverythingAndCount(client: client)
                guard counted == groups, fetched == objects else {
                    throw BenchError("the client counted \(counted) groups in \(fetched) objects")
                }
                clientSide.append(elapsed.seconds)
            }
            say("   counted client-side: " + clientSide.map { format($0 * 1000) + " ms" }.joined(separator: ", "))
            return (median(times), median(clientSide), try sqlite.groupedCount().1.seconds)
        }
        report.detail(
            "5 grouped count",
            [
                "aggregate_ms": aggregate * 1000, "client_side_ms": clientSide * 1000,
                "client_side_first_ms": streamed.seconds * 1000,
                "sqlite_in_process_ms": sqliteCount * 1000,
            ])
        report.add(
            "5 grouped count", modeld: format(aggregate * 1000) + " ms pushed down",
            baseline: format(clientSide * 1000) + " ms counted client-side", ratio: clientSide / aggregate,
            target: ">= 20x faster",
            met: clientSide / aggregate >= 20)
    }

    /// 6: durable saves of one object each.
    func saveWorkloads(
        _ workloads: ModeldWorkloads, postgres: PostgresCluster, daemon: any BenchDaemon, report: inout Report
    ) async throws {
        say("6. durable small saves, 1 and 32 clients (\(max(1, rounds - 1)) alternated rounds)")
        let schema = try Dataset.schema()
        _ = try await DaemonClient.withClient(socketPath: workloads.socketPath) {
            try await $0.createStore("saves", schema: schema)
        }
        try postgres.psql("CREATE TABLE saves (LIKE item INCLUDING ALL);")
        let script = """
            \\set n random(1, 1000000)
            INSERT INTO saves(name, category, score, price, created) VALUES ('item-' || :n, 'c1', :n, 1.5, now());
            """
        var modeld1: [Double] = [], modeld32: [Double] = [], postgres1: [Double] = [], postgres32: [Double] = []
        var costs = CallCosts(), postgresCosts = PostgresCosts()
        for round in 0..<max(1, rounds - 1) {
            modeld1.append(try await workloads.smallSaves(clients: 1, seconds: seconds, into: "saves").rate)
            postgres1.append(
                try postgres.pgbench(script: script, clients: 1, seconds: Int(seconds)).transactionsPerSecond)
            let (rate, pg) = try await concurrentRound(
                "6 saves 32 clients", clients: 32, script: script, postgres: postgres,
                costs: &costs, postgresCosts: &postgresCosts, daemon: daemon, report: &report
            ) {
                try await workloads.smallSaves(clients: 32, seconds: seconds, into: "saves")
            }
            modeld32.append(rate)
            postgres32.append(pg)
            say(
                "   round \(round + 1): modeld \(perSecond(modeld1.last!)) / \(perSecond(rate)), PostgreSQL \(perSecond(postgres1.last!)) / \(perSecond(pg))"
            )
        }
        say("   per save, 32 clients: modeld \(costs.description); PostgreSQL \(postgresCosts.description)")
        report.detail("6 saves 32 clients modeld costs", costs.summary)
        report.detail("6 saves 32 clients PostgreSQL costs", postgresCosts.summary)
        let m1 = median(modeld1), m32 = median(modeld32), p1 = median(postgres1), p32 = median(postgres32)
        report.detail(
            "6 saves",
            [
                "modeld_1_client_per_s": m1, "modeld_32_clients_per_s": m32, "postgres_1_client_per_s": p1,
                "postgres_32_clients_per_s": p32,
            ])
        report.add(
            "6 durable saves, 32 clients", modeld: perSecond(m32), baseline: perSecond(p32) + " PostgreSQL",
            ratio: m32 / p32,
            target: ">= 1.0x", met: m32 >= p32)
        report.add(
            "6 group commit", modeld: perSecond(m32) + " (32 clients)", baseline: perSecond(m1) + " (modeld, 1 client)",
            ratio: m32 / m1,
            target: ">= 5x", met: m32 >= 5 * m1)
    }

    /// One round of a concurrent workload: modeld's run (its CPU and wake-ups added to `costs`),
    /// then pgbench's with as many clients (its CPU added to `postgresCosts`); both latency
    /// summaries go into the details under `label`. Returns both rates.
    private func concurrentRound(
        _ label: String, clients: Int, script: String, postgres: PostgresCluster, costs: inout CallCosts,
        postgresCosts: inout PostgresCosts, daemon: any BenchDaemon, report: inout Report,
        modeld: () async throws -> (rate: Double, Latencies)
    ) async throws -> (modeld: Double, postgres: Double) {
        let (rate, latencies) = try await costs.measure(daemon: daemon, calls: { $0.1.count }, modeld)
        report.detail("\(label) modeld", latencies.summary)
        let pg = try postgres.pgbench(script: script, clients: clients, seconds: Int(seconds))
        postgresCosts.add(pg)
        report.detail("\(label) PostgreSQL", pg.latencies.summary)
        return (rate, pg.transactionsPerSecond)
    }

    /// 8: the cost of an isolated store per test.
    func harnessWorkload(_ workloads: ModeldWorkloads, postgres: PostgresCluster, schema: Schema, report: inout Report)
        async throws
    {
        say("8. \(stores) isolated stores vs \(databases) PostgreSQL databases from a template")
        let (modeldTime, steps) = try await workloads.isolatedStores(stores, schema: schema)
        for (step, latencies) in steps.sorted(by: { $0.key < $1.key }) {
            report.detail("8 harness modeld \(step)", latencies.summary)
            say("   \(step): p50 \(micros(latencies.percentile(50)))")
        }
        try postgres.psql("CREATE DATABASE tmpl;")
        try postgres.psql(
            Dataset.sql.replacingOccurrences(of: "INTEGER PRIMARY KEY", with: "BIGSERIAL PRIMARY KEY")
                .replacingOccurrences(of: "created REAL", with: "created TIMESTAMPTZ"), database: "tmpl")
        var script = ""
        for n in 0..<databases {
            script += """
                CREATE DATABASE t\(n) TEMPLATE tmpl;
                \\c t\(n)
                INSERT INTO item(name, category, score, price, created) VALUES ('item-1', 'c1', 1, 1.5, now());
                \\c postgres
                DROP DATABASE t\(n);

                """
        }
        let (_, postgresTime) = try await measure { try postgres.psql(script) }
        let modeldPer = modeldTime.seconds / Double(stores), postgresPer = postgresTime.seconds / Double(databases)
        report.detail(
            "8 harness", ["modeld_ms_per_test": modeldPer * 1000, "postgres_ms_per_test": postgresPer * 1000])
        report.add(
            "8 harness, per test", modeld: format(modeldPer * 1000) + " ms",
            baseline: format(postgresPer * 1000) + " ms PostgreSQL",
            ratio: postgresPer / modeldPer, target: ">= 20x faster", met: postgresPer / modeldPer >= 20)
    }
}
