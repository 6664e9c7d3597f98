#if canImport(Glibc)
    import Glibc
#endif
import Foundation

extension BenchCommand {
    /// 14: an empty call (DaemonService/Status) from Python's grpcio over HTTP/2, answered by
    /// modeld and by grpcio's own server answering the very same bytes on the same kind of socket
    /// (`scripts/bench-grpcio.py`, in the venv `scripts/bench` makes), alternated round by round.
    /// The ratio is modeld's p50 over grpcio's: what every client outside Swift pays for modeld's
    /// HTTP/2 path against the reference implementation (target ≤ 1.0x).
    func grpcioWorkload(_ workloads: ModeldWorkloads, report: inout Report) async throws {
        let repository = FileManager.default.currentDirectoryPath
        let python = repository + "/.venv/bin/python", script = repository + "/scripts/bench-grpcio.py"
        guard FileManager.default.isExecutableFile(atPath: python), FileManager.default.fileExists(atPath: script)
        else {
            throw BenchError("workload 14 needs \(python) with grpcio and \(script): run it through scripts/bench")
        }
        say(
            "14. an empty call from grpcio: modeld's HTTP/2 socket and grpcio's own server (\(rounds) alternated rounds)"
        )
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "grpcio-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let own = directory.appendingPathComponent("grpcio.sock").path,
            log = directory.appendingPathComponent("log").path
        let server = try Spawn.start([python, script, "serve", workloads.socketPath, own], outputPath: log)
        defer {
            kill(server, SIGTERM)
            var status: Int32 = 0
            waitpid(server, &status, 0)
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("serving") {
            guard ContinuousClock.now < deadline else {
                throw BenchError(
                    "grpcio's server did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(50))
        }

        var figures: [String: [(p50: Double, p99: Double)]] = [:]
        for round in 0..<rounds {
            var line: [String] = []
            for (name, socket) in [("modeld", workloads.socketPath), ("grpcio", own)] {
                let (status, output, _) = try Spawn.run([python, script, "calls", socket, "2000"])
                let fields = output.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
                guard status == 0, fields.count == 3, fields[0] > 0 else {
                    throw BenchError("grpcio's calls to \(name) failed (status \(status)): \(output)")
                }
                figures[name, default: []].append((fields[1] / 1_000, fields[2] / 1_000))
                line.append("\(name) p50 \(micros(fields[1] / 1_000)), p99 \(micros(fields[2] / 1_000))")
            }
            say("   round \(round + 1): " + line.joined(separator: "; "))
        }
        let modeld = median(figures["modeld", default: []].map(\.p50))
        let grpcio = median(figures["grpcio", default: []].map(\.p50))
        report.detail(
            "14 empty call from grpcio",
            [
                "modeld_p50_us": modeld, "grpcio_server_p50_us": grpcio,
                "modeld_p99_us": median(figures["modeld", default: []].map(\.p99)),
                "grpcio_server_p99_us": median(figures["grpcio", default: []].map(\.p99)),
            ])
        report.add(
            "14 empty call from grpcio (HTTP/2) p50", modeld: micros(modeld),
            baseline: micros(grpcio) + " grpcio's server",
            ratio: modeld / grpcio, target: "<= 1.0x (lower is better)", met: modeld <= grpcio)
    }
}
