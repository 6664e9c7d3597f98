import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import SystemdHarness
import Testing

/// The daemon's metrics against the spawned modeld: what `DaemonService.Metrics` (and
/// `modelctl metrics`) prints counts exactly the calls and saves the test made and passes
/// Prometheus's own checker (`promtool check metrics`); with `--metrics-address`, a real
/// Prometheus server from Debian's package scrapes the same figures over HTTP.
@Suite struct MetricsTests {
    static let schema = Schema(entities: [
        EntityDescription(name: "Item", attributes: [AttributeDescription(name: "n", type: .int)])
    ])

    @Test func theMetricsCountWhatHappenedAndPassPromtool() async throws {
        try await Self.withSpawnedDaemon { daemon, client in
            try await client.createStore("shop", schema: Self.schema)
            for n in 0..<7 {
                try await client.apply(
                    [.insert(entity: "Item", attributes: ["n": .int(Int64(n))], relationships: [:], id: nil)],
                    in: "shop")
            }
            _ = try? await client.store("nowhere")
            _ = try await client.openSession(on: "shop", author: "metrics")
            try await client.deleteHistory(through: HistoryToken(2), in: "shop")

            let text = try await client.metrics()
            let metrics = Exposition(text)
            #expect(metrics.value("modeld_rpc_calls_total", ["method": "Apply", "code": "ok"]) == 7, "\(text)")
            #expect(metrics.value("modeld_rpc_calls_total", ["method": "GetStore", "code": "notFound"]) == 1)
            #expect(metrics.value("modeld_rpc_duration_seconds_count", ["method": "Apply"]) == 7)
            #expect(metrics.value("modeld_saves_total", ["store": "shop"]) == 7)
            #expect(metrics.value("modeld_stores") == 1)
            #expect(metrics.value("modeld_open_sessions") == 1)
            #expect(metrics.value("modeld_store_history_token", ["store": "shop", "backend": "sqlite"]) == 7)
            #expect(metrics.value("modeld_store_history_transactions", ["store": "shop"]) == 5)
            #expect((metrics.value("modeld_store_size_bytes", ["store": "shop"]) ?? 0) > 0)
            // The storage layer's group commits, through the process's swift-metrics.
            #expect(metrics.value("modeld_group_commit_saves_sum") == 7, "\(text)")
            #expect((metrics.value("modeld_group_commit_saves_count") ?? 0) >= 1)

            let checked = try await Self.promtool(text, in: daemon.directory)
            #expect(checked.status == 0, "promtool: \(checked.error) \(checked.output)")

            // A dropped store's series go with it.
            try await client.dropStore("shop", force: true)
            let after = Exposition(try await client.metrics())
            #expect(after.value("modeld_saves_total", ["store": "shop"]) == nil)
            #expect(after.value("modeld_store_history_token", ["store": "shop"]) == nil)
            #expect(after.value("modeld_stores") == 0)

            // A store made again under a dropped store's name, with no scrape between, counts
            // its own saves from zero.
            let save = ObjectEdit.insert(entity: "Item", attributes: ["n": .int(1)], relationships: [:], id: nil)
            try await client.createStore("scratch", schema: Self.schema)
            try await client.apply([save], in: "scratch")
            try await client.apply([save], in: "scratch")
            try await client.dropStore("scratch", force: true)
            try await client.createStore("scratch", schema: Self.schema)
            try await client.apply([save], in: "scratch")
            let again = Exposition(try await client.metrics())
            #expect(again.value("modeld_saves_total", ["store": "scratch"]) == 1)

            // So does one a restored backup replaced (the store it replaced was dropped).
            let backup = Shared(Data())
            _ = try await client.backupStore("scratch") { chunk in backup.update { $0.append(chunk) } }
            try await client.apply([save], in: "scratch")
            let chunks = Shared([backup.value])
            _ = try await client.restoreStore("scratch", replace: true) {
                chunks.update { $0.isEmpty ? nil : $0.removeFirst() }
            }
            try await client.apply([save], in: "scratch")
            let restored = Exposition(try await client.metrics())
            #expect(restored.value("modeld_saves_total", ["store": "scratch"]) == 1)
        }
    }

    /// Only a store whose files the daemon keeps has a size on disk: a PostgreSQL store (whose
    /// URL's path starts with "/" too) has its other gauges and none of that one.
    /// Nor a path: `StoreInfo.path` names an SQLite store's file only.
    @Test func aPostgreSQLStoreHasNoSizeOnDiskNorPath() async throws {
        try await Self.withSpawnedDaemon { _, client in
            try await client.createStore(
                "pg", backend: nil, url: try PostgresServer.freshStoreURL(), schema: Self.schema)
            try await client.createStore("file", schema: Self.schema)
            let save = ObjectEdit.insert(entity: "Item", attributes: ["n": .int(1)], relationships: [:], id: nil)
            try await client.apply([save], in: "pg")
            try await client.apply([save], in: "file")
            let metrics = Exposition(try await client.metrics())
            #expect(metrics.value("modeld_store_history_token", ["store": "pg", "backend": "postgres"]) == 1)
            #expect(metrics.value("modeld_store_size_bytes", ["store": "pg"]) == nil)
            #expect((metrics.value("modeld_store_size_bytes", ["store": "file"]) ?? 0) > 0)
            #expect(try await client.store("pg").path == nil)
            #expect(try await client.store("file").path?.hasSuffix("/stores/file.sqlite") == true)
            try await client.dropStore("pg", force: true)
        }
    }

    /// Runs `body` with a client of a modeld spawned for it (no default store, and `arguments`),
    /// which must then stop cleanly; a failure is recorded with the end of the daemon's log.
    private static func withSpawnedDaemon(
        _ arguments: [String] = [], _ body: (ModeldProcess, DaemonClient) async throws -> Void
    ) async throws {
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""] + arguments)
        do {
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { try await body(daemon, $0) }
            #expect(try await daemon.stop() == 0)
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await daemon.remove()
    }

    @Test func anIPv6AddressIsLoggedAsAURLThatWorks() async throws {
        try await Self.withSpawnedDaemon(["--metrics-address", "[::1]:0"]) { daemon, _ in
            let line = try #require(await Self.logLine(of: daemon, containing: "serving metrics at http://"))
            let url = try #require(line.split(separator: " ").last.map(String.init))
            #expect(url.hasPrefix("http://[::1]:") && url.hasSuffix("/metrics"), "\(line)")
            // -g: curl takes the brackets as the address's, not as a range to expand.
            let page = try await Self.curl(["-s", "-g", "-i", url], in: daemon.directory)
            #expect(page.output.hasPrefix("HTTP/1.1 200 OK"), "\(page)")
        }
    }

    @Test func prometheusScrapesTheDaemonOverLoopbackHTTP() async throws {
        let daemon = try await ModeldProcess.launch(arguments: [
            "--default-store", "", "--metrics-address", "127.0.0.1:0",
        ])
        var prometheus: Process?
        do {
            let line = try #require(await Self.logLine(of: daemon, containing: "serving metrics at http://"))
            let url = try #require(line.split(separator: " ").last.map(String.init))
            #expect(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/metrics"))
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.createStore("shop", schema: Self.schema)
                for n in 0..<3 {
                    try await client.apply(
                        [.insert(entity: "Item", attributes: ["n": .int(Int64(n))], relationships: [:], id: nil)],
                        in: "shop")
                }
            }
            // The endpoint itself: the text format at /metrics, 404 elsewhere.
            let page = try await Self.curl(["-s", "-i", url], in: daemon.directory)
            #expect(page.output.hasPrefix("HTTP/1.1 200 OK"), "\(page)")
            #expect(page.output.contains("Content-Type: text/plain; version=0.0.4"), "\(page)")
            #expect(page.output.contains("modeld_saves_total{store=\"shop\"} 3"), "\(page)")
            let elsewhere = try await Self.curl(
                ["-s", "-o", "/dev/null", "-w", "%{http_code}", url.replacingOccurrences(of: "/metrics", with: "/x")],
                in: daemon.directory)
            #expect(elsewhere.output == "404")

            // A real Prometheus scrapes it every second.
            let target = String(url.dropFirst("http://".count).dropLast("/metrics".count))
            let port = try Self.freePort()
            let config = daemon.directory.appendingPathComponent("prometheus.yml")
            try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: modeld
                static_configs:
                  - targets: ['\(target)']
            """.write(to: config, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prometheus")
            process.arguments = [
                "--config.file=\(config.path)",
                "--storage.tsdb.path=\(daemon.directory.appendingPathComponent("tsdb").path)",
                "--web.listen-address=127.0.0.1:\(port)",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(
                forWritingTo: Self.file(daemon.directory.appendingPathComponent("prometheus.log")))
            try process.run()
            prometheus = process
            let query = "http://127.0.0.1:\(port)/api/v1/query?query=modeld_saves_total"
            var answer = ""
            for _ in 0..<300 where !answer.contains("\"value\":[") {
                answer = (try? await Self.curl(["-s", query], in: daemon.directory).output) ?? ""
                if !answer.contains("\"value\":[") { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(answer.contains("\"store\":\"shop\""), "\(answer)")
            #expect(answer.contains(",\"3\"]"), "Prometheus's answer: \(answer)")
            let up = try await Self.curl(
                ["-s", "http://127.0.0.1:\(port)/api/v1/query?query=up"], in: daemon.directory)
            #expect(up.output.contains("\"job\":\"modeld\"") && up.output.contains(",\"1\"]"), "\(up.output)")
            #expect(try await daemon.stop() == 0)
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        if let prometheus {
            prometheus.terminate()
            while prometheus.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        }
        await daemon.remove()
    }

    @Test func aMetricsAddressOffLoopbackIsRefused() async throws {
        let directory = try TemporaryDirectory.make(prefix: "ma")
        defer { try? FileManager.default.removeItem(at: directory) }
        for address in ["0.0.0.0:9464", "10.1.2.3:9464", "127.0.0.1", "[::]:9464"] {
            let result = try await run(
                try modeldExecutable(),
                [
                    "--socket", directory.appendingPathComponent("s").path, "--data-dir", directory.path,
                    "--metrics-address", address,
                ],
                in: directory)
            #expect(result.status == 64, "\(address): \(result)")
            #expect(result.error.contains("not a loopback address"), "\(address): \(result.error)")
        }
    }

    /// The first line of the daemon's log that contains `text`, once it is there (nil if not
    /// within 60 seconds). The daemon answers calls as soon as its sockets listen, which can be
    /// before its metrics endpoint is up and has said where.
    static func logLine(of daemon: ModeldProcess, containing text: String) async -> Substring? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let line = daemon.log.split(separator: "\n").first(where: { $0.contains(text) }) { return line }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    static func promtool(_ text: String, in directory: URL) async throws -> CommandResult {
        let file = directory.appendingPathComponent("metrics.txt")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return try await run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "exec /usr/bin/promtool check metrics < \"$0\"", file.path],
            in: directory)
    }

    static func curl(_ arguments: [String], in directory: URL) async throws -> CommandResult {
        try await run(URL(fileURLWithPath: "/usr/bin/curl"), ["--max-time", "10"] + arguments, in: directory)
    }

    static func file(_ url: URL) -> URL {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        return url
    }

    /// A TCP port on loopback that nothing listens on now.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileWriteUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Prometheus's text format, read back: each sample's value by name and labels.
struct Exposition {
    let samples: [(name: String, labels: [String: String], value: Double)]

    init(_ text: String) {
        var samples: [(String, [String: String], Double)] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else {
                samples.append((String(series), [:], value))
                continue
            }
            var labels: [String: String] = [:]
            for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",")
            {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { labels[String(parts[0])] = String(parts[1].dropFirst().dropLast()) }
            }
            samples.append((String(series[..<brace]), labels, value))
        }
        self.samples = samples
    }

    /// The value of the one sample of `name` whose labels include `labels`; nil if there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }?.value
    }
}
