#if canImport(Glibc)
    import Glibc
#endif
import ArgumentParser
import Foundation
import Metrics
import Prometheus
import Logging
import ModelServer
import ModelWire
import ServiceLifecycle

/// `modeld`: the daemon. With no flags it runs on an embedded default: a per-user data directory
/// and socket (or /var/lib/modeld and /run/modeld/modeld.sock as root), with a `default` store.
@main
struct Modeld: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modeld",
        abstract: "Serve object stores (SQLite, in memory or PostgreSQL) over a Unix socket, as gRPC.",
        discussion: """
            Every option can also be set with an environment variable (shown in brackets); an \
            option on the command line wins. With no options modeld listens on \
            $XDG_RUNTIME_DIR/modeld/modeld.sock (without it: /tmp/modeld-<uid>/modeld.sock) and \
            keeps its stores in $XDG_DATA_HOME/modeld (without it: ~/.local/share/modeld) (as \
            root: /run/modeld/modeld.sock and /var/lib/modeld), creating a 'default' store.

            SIGTERM, SIGINT or SIGHUP (it has no configuration to reload) stops it cleanly: streams are ended, other calls under way get up to \
            5 seconds to finish, sessions are closed (discarding what they did not save), stores \
            are closed and the socket is removed.

            Exit status: 0 after such a stop; 64 for an option or variable it refuses; 1 when it \
            cannot start (the reason is logged, and sent to systemd under it).
            """,
        version: ModelDaemon.version
    )

    @Option(name: .long, help: "The Unix socket to listen on, at most 96 bytes. [MODELD_SOCKET]")
    var socket: String?

    @Option(
        name: .long, help: "The socket's permissions, in octal (default 0660: owner and group). [MODELD_SOCKET_MODE]")
    var socketMode: String?

    @Option(name: .long, help: "Where stores are kept, created with mode 0700. [MODELD_DATA_DIR]")
    var dataDir: String?

    @Option(
        name: .long,
        help:
            "Seconds without a call after which a session is closed, discarding what it did not save (default 600). [MODELD_IDLE_TIMEOUT]"
    )
    var idleTimeout: Double?

    @Option(
        name: .long,
        help:
            "Seconds without a call after which a staged migration's session is closed, rolling the migration back and freeing its store (default 60). [MODELD_MIGRATION_IDLE_TIMEOUT]"
    )
    var migrationIdleTimeout: Double?

    @Option(name: .long, help: "The most sessions open at once (default 1000). [MODELD_MAX_SESSIONS]")
    var maxSessions: Int?

    @Option(
        name: .long,
        help:
            "The largest request accepted, in bytes; K, M, G and T suffixes allowed (default 16M, at least 64K, at most 1024M). [MODELD_MAX_MESSAGE_SIZE]"
    )
    var maxMessageSize: String?

    @Option(
        name: .long,
        help:
            "The largest a store file may grow; K, M, G and T suffixes allowed (default: no limit). Saves beyond fail with RESOURCE_EXHAUSTED; reads go on. [MODELD_MAX_STORE_SIZE]"
    )
    var maxStoreSize: String?

    @Option(
        name: .long,
        help:
            "The most client connections at once, fewer if the file-descriptor limit is lower (default 4096). [MODELD_MAX_CONNECTIONS]"
    )
    var maxConnections: Int?

    @Option(
        name: .long,
        help: "Seconds a connection with no call under way stays open (default 300). [MODELD_CONNECTION_IDLE_TIMEOUT]")
    var connectionIdleTimeout: Double?

    @Option(
        name: .long,
        help: "Seconds a request may take to arrive whole once it has begun (default 30). [MODELD_REQUEST_TIMEOUT]")
    var requestTimeout: Double?

    @Option(
        name: .long,
        help:
            "The most bytes held for requests still arriving, across connections; K, M, G and T suffixes allowed (default 256M, or --max-message-size when that is larger; at least 1M and at least --max-message-size). [MODELD_MAX_PENDING_REQUEST_BYTES]"
    )
    var maxPendingRequestBytes: String?

    @Option(
        name: .long,
        help:
            "The most fetches streamed from stores at once, each holding a reader of its own (default 32). [MODELD_MAX_STREAMING_FETCHES]"
    )
    var maxStreamingFetches: Int?

    @Option(
        name: .long,
        help:
            "The most bytes the open watches hold between them (their last results); K, M, G and T suffixes allowed (default 256M, at least 1M). A watch past it ends with RESOURCE_EXHAUSTED. [MODELD_MAX_WATCH_MEMORY]"
    )
    var maxWatchMemory: String?

    @Option(
        name: .long,
        help:
            "Seconds a streamed response may wait for its client to read before the stream is ended (default 20). [MODELD_STREAM_STALL_TIMEOUT]"
    )
    var streamStallTimeout: Double?

    @Option(
        name: .long,
        help:
            "Delete history transactions older than this, in the background: 30d, 12h, 90m, 45s (default: keep them). [MODELD_HISTORY_RETENTION_AGE]"
    )
    var historyRetentionAge: String?

    @Option(
        name: .long,
        help:
            "Keep at most this many history transactions per store, deleting the oldest in the background (default: no limit). [MODELD_HISTORY_RETENTION_TRANSACTIONS]"
    )
    var historyRetentionTransactions: Int?

    @Option(
        name: .long,
        help:
            "Seconds between two applications of the history retention (default 60). [MODELD_HISTORY_PRUNE_INTERVAL]")
    var historyPruneInterval: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve the metrics over HTTP at http://ADDRESS/metrics for Prometheus to scrape, on a loopback address only: 127.0.0.1:9464, [::1]:9464 (default: off; 'modelctl metrics' prints them anyway). [MODELD_METRICS_ADDRESS]",
            valueName: "address"))
    var metricsAddress: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A group whose members administer every store, as root and the daemon's own user do (default: none). [MODELD_ADMIN_GROUP]",
            valueName: "group"))
    var adminGroup: String?

    @Option(
        name: .long, help: "trace, debug, info, notice, warning, error or critical (default info). [MODELD_LOG_LEVEL]")
    var logLevel: String?

    @Option(
        name: .long,
        help: "A store to create at start-up if missing; '' for none (default 'default'). [MODELD_DEFAULT_STORE]")
    var defaultStore: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The time slice modeld's threads ask Linux's scheduler for, in microseconds: 100 to 100000, or 0 to keep the kernel's (default 100). [MODELD_TIME_SLICE]",
            valueName: "microseconds"))
    var timeSlice: Int?

    @Flag(
        name: .customLong("manual"), help: ArgumentHelp("Print modeld's man page (roff) and exit.", visibility: .hidden)
    )
    var printManual = false

    func run() async throws {
        if printManual {
            FileHandle.standardOutput.write(Data(DaemonManual.render(date: Date()).utf8))
            return
        }
        Self.raiseFileDescriptorLimit()
        let environment = ProcessInfo.processInfo.environment
        let systemd = SystemdEnvironment(environment: environment)
        SystemdEnvironment.clearInherited()
        var settings = try DaemonSettings(flags: self, environment: environment, userID: geteuid())
        // Before the event loops and the writer's threads exist: they inherit it.
        let timeSlice = TimeSlice.request(microseconds: settings.timeSliceMicroseconds)
        if let sockets = systemd.activatedSockets {
            // Socket activation: systemd bound the sockets (and set their mode and group): the
            // gRPC one, and the framed one at `<path>.frames` when the socket unit lists it.
            settings.server.listeningSocketDescriptor = sockets.grpc
            settings.server.framedSocketDescriptor = sockets.framed
            if let path = SystemdEnvironment.socketPath(of: sockets.grpc) { settings.server.socketPath = path }
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in
            if systemd.logsToJournal {
                var handler = JournalLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "modeld")
        let sliceLine = TimeSlice.describe(timeSlice, microseconds: settings.timeSliceMicroseconds)
        if case .refused = timeSlice { logger.notice("\(sliceLine)") } else { logger.debug("\(sliceLine)") }
        // One registry for the daemon's metrics and the process's swift-metrics backend (the
        // storage layer's group-commit sizes record through it).
        let metrics = PrometheusCollectorRegistry()
        settings.server.metricsRegistry = metrics
        MetricsSystem.bootstrap(ModeldMetricsFactory(registry: metrics))
        // Files and directories are the daemon's alone; the socket's mode is set after binding.
        umask(0o077)
        let notifier = systemd.notifySocket.map(SystemdNotifier.init)
        let socketPath = settings.server.socketPath
        let daemon = ModelDaemon(
            configuration: settings.server, logger: logger,
            events: DaemonEvents(
                ready: { notifier?.send("READY=1\nSTATUS=Serving on \(socketPath)\nMAINPID=\(getpid())") },
                stopping: { notifier?.stopping("STATUS=Stopping: finishing calls under way") }))
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(
                service: daemon, successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup)
        ]
        if let notifier, let interval = systemd.watchdogInterval {
            services.append(
                .init(
                    service: WatchdogService(
                        interval: interval, notifier: notifier,
                        status: { [daemon] in
                            daemon.isServing ? daemon.statusLine : nil
                        })))
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services, gracefulShutdownSignals: [.sigterm, .sigint, .sighup], logger: logger))
        do {
            try await group.run()
        } catch let error as DaemonStartError {
            logger.critical("\(error)")
            if !systemd.logsToJournal { FileHandle.standardError.write(Data("modeld: \(error)\n".utf8)) }
            notifier?.send("STATUS=Failed to start: \(error)\nERRNO=1")
            throw ExitCode(1)
        }
    }

    /// Raises the soft limit on open files to the hard one, as servers do: the soft default (1024)
    /// exists for programs that use select(), and the daemon plans its connections by it. Where the
    /// limit cannot be changed (the installed unit forbids it and sets LimitNOFILE= instead), the
    /// limit in force stays.
    static func raiseFileDescriptorLimit() {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0, limits.rlim_cur < limits.rlim_max else { return }
        limits.rlim_cur = limits.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
    }
}
