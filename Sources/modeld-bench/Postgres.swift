#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// A throwaway PostgreSQL 15 cluster in a temporary directory, listening on a Unix socket only,
/// with the Item table loaded; stopped and removed at the end. As root, the server runs as the
/// `postgres` user (initdb refuses root).
final class PostgresCluster {
    let directory: URL
    let binaries: URL
    var socketDirectory: String { directory.path }
    private let asUser: [String]

    static func locateBinaries() -> URL? {
        for version in ["15", "16", "17"] {
            let candidate = URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin")
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("initdb").path) {
                return candidate
            }
        }
        return nil
    }

    init(directory: URL) throws {
        guard let binaries = Self.locateBinaries() else {
            throw BenchError("PostgreSQL is not installed (apt-get install postgresql): scripts/bench installs it")
        }
        self.binaries = binaries
        self.directory = directory
        asUser = geteuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        if geteuid() == 0 {
            try run(["/bin/chown", "-R", "postgres:postgres", directory.path])
        }
        let data = directory.appendingPathComponent("data").path
        try run(
            asUser + [
                binaries.appendingPathComponent("initdb").path, "-D", data, "--auth=trust", "-U", "postgres",
                "--no-sync",
            ])
        // Defaults otherwise: fsync on, synchronous_commit on, full_page_writes on.
        let options =
            "-c listen_addresses='' -c unix_socket_directories='\(socketDirectory)' -c max_connections=100 -c shared_buffers=256MB"
        try run(
            asUser + [
                binaries.appendingPathComponent("pg_ctl").path, "-D", data, "-l",
                directory.appendingPathComponent("pg.log").path,
                "-o", options, "start",
            ])
        let deadline = Date().addingTimeInterval(60)
        while (try? run([binaries.appendingPathComponent("pg_isready").path, "-h", socketDirectory, "-U", "postgres"]))
            == nil
        {
            guard Date() < deadline else {
                throw BenchError(
                    "PostgreSQL did not start within 60 s: \((try? String(contentsOf: directory.appendingPathComponent("pg.log"), encoding: .utf8)) ?? "")"
                )
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    func stop() {
        _ = try? run(
            asUser + [
                binaries.appendingPathComponent("pg_ctl").path, "-D", directory.appendingPathComponent("data").path,
                "-m", "immediate", "-w", "stop",
            ])
    }

    /// Runs SQL (or psql meta-commands) through psql, on `database`; returns what it printed.
    @discardableResult
    func psql(_ script: String, database: String = "postgres") throws -> String {
        let file = directory.appendingPathComponent("script-\(UUID().uuidString).sql")
        try script.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try run([
            binaries.appendingPathComponent("psql").path, "-h", socketDirectory, "-U", "postgres", "-d", database,
            "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-f", file.path,
        ])
    }

    /// The Item table with `rows` rows (row i as everywhere else), and its index; vacuumed and
    /// checkpointed, so that the checkpoint of the load (a few hundred megabytes written and
    /// synced) does not fall in a later workload, modeld's or PostgreSQL's.
    func load(rows: Int) throws {
        try psql(
            """
            CREATE TABLE item(id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, score BIGINT NOT NULL,
                              price DOUBLE PRECISION NOT NULL, created TIMESTAMPTZ NOT NULL);
            INSERT INTO item(id, name, category, score, price, created)
              SELECT i, 'item-' || i, 'c' || (i % \(Dataset.categories)), (i::bigint * 7919) % 1000003, (i % 10000) / 100.0,
                     timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second'
              FROM generate_series(1, \(rows)) AS i;
            SELECT setval('item_id_seq', \(rows));
            CREATE INDEX item_score ON item(score);
            VACUUM ANALYZE item;
            CHECKPOINT;
            """)
    }

    struct PgbenchResult {
        var transactionsPerSecond: Double
        var latencies: Latencies
        /// CPU time, in seconds, that the server's processes and pgbench spent on the run.
        var serverCPUSeconds: Double
        var clientCPUSeconds: Double
    }

    /// pgbench with a custom script (prepared statements), `clients` clients for `seconds`;
    /// latencies from its per-transaction log.
    func pgbench(script: String, clients: Int, seconds: Int) throws -> PgbenchResult {
        let run = directory.appendingPathComponent("pgbench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: run) }
        let scriptFile = run.appendingPathComponent("script.sql")
        try script.write(to: scriptFile, atomically: true, encoding: .utf8)
        let serverBefore = serverCPUSeconds()
        let (output, clientCPU) = try self.measuredRun([
            binaries.appendingPathComponent("pgbench").path, "-h", socketDirectory, "-U", "postgres", "-n",
            "-M", "prepared", "-c", "\(clients)", "-j", "\(min(clients, 2))", "-T", "\(seconds)",
            "-f", scriptFile.path, "-l", "--log-prefix", run.appendingPathComponent("log").path, "postgres",
        ])
        // The backends exit as pgbench disconnects; the postmaster counts their time once it has
        // reaped them.
        Thread.sleep(forTimeInterval: 0.1)
        let serverCPU = serverCPUSeconds() - serverBefore
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
            let tps = Double(line.dropFirst("tps = ".count).split(separator: " ").first ?? "")
        else { throw BenchError("pgbench printed no tps:\n\(output)") }
        var latencies = Latencies()
        for file in try FileManager.default.contentsOfDirectory(atPath: run.path) where file.hasPrefix("log") {
            let text = try String(contentsOf: run.appendingPathComponent(file), encoding: .utf8)
            for entry in text.split(separator: "\n") {
                // client_id transaction_no time script_no time_epoch time_us (time in µs)
                let fields = entry.split(separator: " ")
                if fields.count >= 3, let micros = Int64(fields[2]) { latencies.record(.microseconds(micros)) }
            }
        }
        return PgbenchResult(
            transactionsPerSecond: tps, latencies: latencies, serverCPUSeconds: serverCPU, clientCPUSeconds: clientCPU)
    }

    /// The CPU time, in seconds, the server has used: the postmaster's, its children's that have
    /// exited (backends, counted by the postmaster as it reaps them), and its living children's
    /// (/proc's clock ticks, 10 ms each: a run of seconds holds hundreds).
    private func serverCPUSeconds() -> Double {
        guard
            let text = try? String(
                contentsOf: directory.appendingPathComponent("data/postmaster.pid"), encoding: .utf8),
            let postmaster = text.split(separator: "\n").first.flatMap({ Int32($0) })
        else { return 0 }
        var ticks = ProcessStats.statFields(of: postmaster).map { $0[11] + $0[12] + $0[13] + $0[14] } ?? 0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let fields = ProcessStats.statFields(of: pid), fields[1] == Double(postmaster)
            else { continue }
            ticks += fields[11] + fields[12]
        }
        return ticks / ProcessStats.ticksPerSecond
    }

    @discardableResult
    private func run(_ arguments: [String]) throws -> String {
        try measuredRun(arguments).output
    }

    /// Runs `arguments`; returns what it printed and the CPU time it used.
    private func measuredRun(_ arguments: [String]) throws -> (output: String, cpuSeconds: Double) {
        let (status, output, cpu) = try Spawn.run(arguments)
        guard status == 0 else {
            throw BenchError("\(arguments.joined(separator: " ")) failed (\(status)):\n\(output)")
        }
        return (output, cpu)
    }
}
