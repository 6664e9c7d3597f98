import ArgumentParser
import ModelRemote

/// `modelctl status`: is the daemon up, which version, how busy.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the daemon's health, version, stores and sessions.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let (status, stores) = try await global.withClient { client in
            (try await client.status(), try await client.stores())
        }
        let writer = RecordWriter(format: global.outputFormat, single: true)
        writer.write([
            [
                ("health", .text("serving")), ("version", .text(status.version)),
                ("pid", .number(Int64(status.processIdentifier))),
                ("uptime_seconds", .number(Int64(status.uptimeSeconds))), ("socket", .text(global.socketPath)),
                ("data_directory", .text(status.dataDirectory)), ("stores", .uris(stores.map(\.name))),
                ("open_sessions", .number(Int64(status.openSessions))),
                ("max_sessions", .number(Int64(status.maximumSessions))),
                ("idle_timeout_seconds", .number(Int64(status.idleTimeoutSeconds))),
                ("open_watches", .number(Int64(status.openWatches))),
                ("watch_memory_bytes", .number(Int64(status.watchMemoryBytes))),
                ("max_watch_memory_bytes", .number(Int64(status.maximumWatchMemoryBytes))),
            ]
        ])
        writer.finish()
    }
}

/// `modelctl metrics`: the daemon's metrics, as Prometheus scrapes them.
struct Metrics: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the daemon's metrics in Prometheus's text format.",
        discussion: """
            Calls by method and status with their latency, sessions, stores, watches, history \
            followers, saves and group-commit sizes, and each store's history and bytes on disk. \
            The same text is served over HTTP for scraping with modeld --metrics-address; \
            'promtool check metrics' reads it from standard input. The output is always that text, \
            of every store: --format and --store do not apply.
            """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let text = try await global.withClient { try await $0.metrics() }
        Terminal.write(text)
    }
}
