import ArgumentParser
import Foundation
import Glibc
import ModelCore
import ModelRemote
import ModelTesting
import SQLiteStorage

/// Runs every workload against modeld and its baselines in the same run, and prints the ratios.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modeld-bench",
        abstract: "Measures modeld against in-process SQLite (the limit) and PostgreSQL over its Unix socket.",
        discussion: "Run it through scripts/bench, which builds in release mode and installs PostgreSQL if needed.")

    @Option(help: "Rows in the large table.") var rows = 1_000_000
    @Option(help: "Objects in the bulk-load save.") var bulk = 100_000
    @Option(help: "Seconds each timed run of the throughput workloads lasts.") var seconds = 5.0
    @Option(help: "Rounds of each alternated comparison.") var rounds = 3
    @Option(help: "Isolated stores made for the harness workload.") var stores = 1_000
    @Option(help: "Databases PostgreSQL creates from a template for the harness workload.") var databases = 100
    @Option(help: "Rows the PostgreSQL store of workload 12 holds (at most --rows).") var postgresStoreRows = 100_000
    @Option(help: "Where to write the JSON figures.") var output = "bench.json"
    @Option(help: "The modeld executable (default: .build/release/modeld).") var modeld: String?
    @Flag(help: "Keep the other core busy for the whole run (the loaded run).") var load = false
    @Flag(
        help:
            "Measure modeld as installed: the units in systemd/ under a real systemd in namespaces of its own, socket-activated (needs root; --modeld outside /tmp and /home)."
    ) var installed = false
    @Option(
        help: ArgumentHelp(
            "Run only these workloads (comma-separated numbers, e.g. 2,4); the bulk load always runs, as it loads the rows.",
            valueName: "list")) var only: String?
    @Option(
        help: ArgumentHelp(
            "Only make calls of one kind (setup, empty, read, save, query, session-read, session-query, save-32, read-16, blocking-read, grouped-count, test-store), --count of them, to the daemon at --socket, untimed: for scripts/callgrind and profiling.",
            valueName: "kind")) var calls: String?
    @Option(help: "How many calls --calls makes (for setup: objects saved).") var count = 1_000
    @Option(help: "The socket of the daemon --calls calls.") var socket: String?
    @Option(
        help:
            "For --calls setup: the URL of the store to make (postgres://…), rather than the daemon's default backend.")
    var storeURL: String?

    /// Whether workload `number` is to run (every one unless `--only` names some).
    func runs(_ numbers: Int...) -> Bool {
        guard let only else { return true }
        let chosen = Set(only.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) })
        return numbers.contains(where: chosen.contains)
    }

    func run() async throws {
        if let calls {
            guard let kind = CallDriver.Kind(rawValue: calls), let socket else {
                throw ValidationError(
                    "--calls takes one of \(CallDriver.Kind.allCases.map(\.rawValue).joined(separator: ", ")), with --socket"
                )
            }
            return try await CallDriver(socketPath: socket, storeURL: storeURL).run(kind, count: count)
        }
        let directory = try TemporaryDirectory.make(prefix: "bench")
        defer { try? FileManager.default.removeItem(at: directory) }
        let busy = BusyLoad()
        if load { try busy.start() }
        defer { busy.stop() }

        var report = Report()
        report.conditions = [
            "rows": "\(rows)", "bulk": "\(bulk)", "load": load ? "busy loop on the other core" : "idle",
            "daemon": installed ? "installed: the systemd units, socket-activated" : "spawned by the bench",
            "cores": "\(ProcessInfo.processInfo.activeProcessorCount)",
            "date": ISO8601DateFormatter().string(from: Date()),
        ]
        say(
            "modeld-bench: \(rows) rows, \(load ? "loaded (a busy loop on the other core)" : "idle machine"), "
                + (installed ? "modeld installed (systemd units, socket-activated)" : "modeld spawned"))

        // The cluster's directory, outside the private one above (the server may run as another
        // user), made before the daemon: an installed daemon sees it at /run/postgresql.
        let postgresDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "modeld-bench-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: postgresDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: postgresDirectory) }
        let executable = URL(fileURLWithPath: modeld ?? ".build/release/modeld")
        let daemon: any BenchDaemon
        if installed {
            let data = directory.appendingPathComponent("installed-data")
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            daemon = try await InstalledDaemon.boot(
                executable: executable, units: URL(fileURLWithPath: "systemd"), dataDirectory: data,
                postgresDirectory: postgresDirectory)
        } else {
            daemon = try await ModeldProcess.launch(
                arguments: ["--max-message-size", "256M", "--log-level", "warning"],
                executable: executable)
        }
        // Removed before returning, not in a `defer` Task that the process's exit would cut short
        // (that left each run's daemon directory, stores and all, in the temporary directory).
        do {
            try await measure(
                daemon: daemon, directory: directory, postgresDirectory: postgresDirectory, report: &report)
        } catch {
            await daemon.remove()
            throw error
        }
        await daemon.remove()
        say("\n" + report.table())
        try report.json().write(to: URL(fileURLWithPath: output))
        say("\nfigures written to \(output)")
    }

    /// Every workload asked for, against `daemon` and the baselines (kept in `directory`).
    private func measure(daemon: any BenchDaemon, directory: URL, postgresDirectory: URL, report: inout Report)
        async throws
    {
        let schema = try Dataset.schema()
        let info = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
            try await $0.createStore("items", schema: schema)
        }
        let workloads = ModeldWorkloads(socketPath: daemon.socketPath, storeIdentifier: info.storeIdentifier)
        let sqlite = try SQLiteBaseline(path: directory.appendingPathComponent("baseline.sqlite").path)
        say("PostgreSQL: starting a cluster and loading \(rows) rows…")
        let postgres = try PostgresCluster(directory: postgresDirectory)
        defer { postgres.stop() }
        try postgres.load(rows: rows)

        // 1. Bulk load, alternated: each round saves into a new SQLite file and a new modeld
        // store, both empty, removed after. The rows the other workloads read are loaded next,
        // untimed.
        say("1. bulk load of \(bulk) objects in one save (\(rounds) alternated rounds)")
        // Each save starts on a quiet disk: PostgreSQL's load, and each save before, leave the
        // kernel writing their files back (`sync` waits for it), which slowed whichever came next.
        var sqliteRates: [Double] = [], modeldRates: [Double] = []
        let files = (0..<rounds).map { directory.appendingPathComponent("bulk-\($0).sqlite").path }
        let stores = (0..<rounds).map { "bulk-\($0)" }
        for (file, store) in zip(files, stores) {
            let baseline = try SQLiteBaseline(path: file)
            Glibc.sync()
            let sqliteBulk = try baseline.insert(1...bulk)
            _ = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                try await $0.createStore(store, schema: schema)
            }
            Glibc.sync()
            let modeldBulk = try await workloads.insert(1...bulk, into: store)
            sqliteRates.append(Double(bulk) / sqliteBulk.seconds)
            modeldRates.append(Double(bulk) / modeldBulk.seconds)
            say(
                "   round \(modeldRates.count): modeld \(perSecond(modeldRates.last!)), SQLite \(perSecond(sqliteRates.last!))"
            )
        }
        // Removed after the rounds: freeing a file's blocks, or emptying a dropped store's files
        // for reuse, would share the disk with the next round.
        for (file, store) in zip(files, stores) {
            _ = try await DaemonClient.withClient(socketPath: daemon.socketPath) { try await $0.dropStore(store) }
            for suffix in SQLiteStore.fileSuffixes { try? FileManager.default.removeItem(atPath: file + suffix) }
        }
        let sqliteRate = median(sqliteRates), modeldRate = median(modeldRates)
        report.detail("1 bulk load", ["modeld_per_s": modeldRate, "sqlite_per_s": sqliteRate])
        report.add(
            "1 bulk load", modeld: perSecond(modeldRate), baseline: perSecond(sqliteRate) + " SQLite",
            ratio: modeldRate / sqliteRate,
            target: ">= 0.5x", met: modeldRate / sqliteRate >= 0.5)
        say("   loading the \(rows) rows…")
        var loaded = 0
        while loaded < rows {
            let next = min(rows, loaded + bulk)
            _ = try sqlite.insert((loaded + 1)...next)
            _ = try await workloads.insert((loaded + 1)...next)
            loaded = next
        }

        if runs(0) { try await transportWorkload(workloads, daemon: daemon, report: &report) }
        if runs(2, 3) {
            try await pointReadWorkloads(workloads, postgres: postgres, sqlite: sqlite, daemon: daemon, report: &report)
        }
        if runs(4, 5, 7) { try await queryWorkloads(workloads, sqlite: sqlite, daemon: daemon, report: &report) }
        if runs(6) { try await saveWorkloads(workloads, postgres: postgres, daemon: daemon, report: &report) }
        if runs(8) { try await harnessWorkload(workloads, postgres: postgres, schema: schema, report: &report) }
        if runs(10) { try await stallWorkload(workloads, daemon: daemon, report: &report) }
        if runs(11) { try await migrationWorkload(workloads, sqlite: sqlite, daemon: daemon, report: &report) }
        if runs(12) { try await postgresStoreWorkload(postgres: postgres, daemon: daemon, report: &report) }
        if runs(13) { try await watchWorkload(daemon: daemon, report: &report) }
        if runs(14) { try await grpcioWorkload(workloads, report: &report) }
    }
}
