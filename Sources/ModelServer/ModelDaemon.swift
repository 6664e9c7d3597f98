import Foundation
import FramedTransport
import GRPCCore
import Logging
import ModelWire
import NIOCore
import ServiceLifecycle
import Synchronization

/// Hooks the `modeld` executable uses to tell systemd how the daemon is doing.
public struct DaemonEvents: Sendable {
    /// Called once stores are open and the socket listens.
    public var ready: (@Sendable () -> Void)?
    /// Called when the daemon starts shutting down.
    public var stopping: (@Sendable () -> Void)?

    public init(ready: (@Sendable () -> Void)? = nil, stopping: (@Sendable () -> Void)? = nil) {
        self.ready = ready
        self.stopping = stopping
    }
}

/// The daemon: its stores, sessions and gRPC services on a Unix socket, as a `Service` that
/// runs until graceful shutdown (SIGTERM under a `ServiceGroup`), then drains in-flight calls,
/// closes sessions (discarding what they did not save) and stores, and removes its socket.
public final class ModelDaemon: Service, Sendable {
    /// modeld's version.
    public static let version = ModeldVersion.current

    public let configuration: ServerConfiguration
    let core: DaemonCore
    private let events: DaemonEvents
    private let lifecycle = Mutex(DaemonLifecycle())

    public init(
        configuration: ServerConfiguration, logger: Logger = Logger(label: "modeld"),
        events: DaemonEvents = DaemonEvents()
    ) {
        self.configuration = configuration
        self.core = DaemonCore(configuration: configuration, logger: logger)
        self.events = events
    }

    private var logger: Logger { core.logger }
    private var bindsPath: Bool { configuration.listeningSocketDescriptor == nil }

    public func run() async throws {
        try lifecycle.withLock { try $0.starting() }
        var thrown: (any Error)?
        do {
            try await serve()
        } catch {
            thrown = error
        }
        // Waiters hear the start error itself (a held lock's holder included), others as text.
        let failure = thrown.map { ($0 as? DaemonStartError) ?? DaemonStartError("\($0)") }
        let waiters = lifecycle.withLock { $0.ended(failure: failure) }
        let why = failure ?? DaemonStartError("the daemon stopped before it was ready")
        for waiter in waiters { waiter.resume(throwing: why) }
        if let thrown { throw thrown }
    }

    /// Returns once the daemon listens; throws if it failed to start or has stopped.
    public func waitUntilReady() async throws {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            if let outcome = lifecycle.withLock({ $0.waitForReady(waiter) }) {
                waiter.resume(with: outcome.mapError { $0 as any Error })
            }
        }
    }

    /// Begins a graceful shutdown, as SIGTERM does under a `ServiceGroup`: streams end, calls
    /// under way finish (for at most the grace period), then sessions and stores close and
    /// ``run()`` returns. Asked before the daemon is ready, it never becomes ready.
    public func shutdown() {
        lifecycle.withLock { $0.stopRequested() }?()
    }

    /// A line about the daemon's load, for systemd's `STATUS=`.
    public var statusLine: String {
        "Serving \(core.catalog.count) store(s), \(core.sessions.count) session(s) on \(configuration.socketPath)"
    }

    /// Whether the daemon is serving (for the health service).
    public var isServing: Bool {
        lifecycle.withLock { $0.isServing }
    }

    private func serve() async throws {
        let guarded = try SocketGuard.acquire(
            dataDirectory: configuration.dataDirectory, socketPath: configuration.socketPath,
            bindsPath: bindsPath)
        defer { guarded.release(removeSocket: bindsPath) }
        try await openStores()

        let transport = makeTransport()
        let services: () -> [any RegistrableRPCService] = { [core] in
            [
                StoreServiceHandler(core: core), SessionServiceHandler(core: core),
                QueryService(handler: QueryServiceHandler(core: core)),
                DaemonServiceHandler(core: core),
                HealthServiceHandler(isServing: { [weak self] in self?.isServing ?? false }),
                ReflectionService(), ReflectionService.V1Alpha(),
            ]
        }
        let server = GRPCServer(
            transport: transport, services: services(), interceptors: Self.interceptors)
        // The same services in modeld's framing, on a socket of their own beside the gRPC one:
        // bound here, or under socket activation the one systemd passed beside the gRPC socket
        // (a socket unit that passes only the gRPC one gets gRPC only).
        let framedPath = DefaultLocations.framedSocketPath(for: configuration.socketPath)
        let framed: FramedServerTransport? =
            if let framedPath, bindsPath || configuration.framedSocketDescriptor != nil {
                FramedServerTransport(
                    path: framedPath, limits: core.limits, directMethods: .modeld(core: core),
                    boundDescriptor: bindsPath ? nil : configuration.framedSocketDescriptor,
                    refusalMetadata: ErrorMetadata.metadata(of:))
            } else {
                nil
            }
        let framedServer = framed.map {
            GRPCServer(
                transport: $0, services: services(), interceptors: Self.interceptors)
        }
        // systemd's socket files are systemd's to remove.
        defer { if let framed, bindsPath { unlink(framed.path) } }
        let (graceStarts, startGrace) = AsyncStream<Void>.makeStream()
        let (listeningEnds, endListening) = AsyncStream<Void>.makeStream()
        let stop: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            logger.info(
                "shutting down: ending streams, finishing calls under way (at most \(configuration.shutdownGracePeriod))"
            )
            events.stopping?()
            core.rpc.stopping.set()
            core.streams.endAll()
            server.beginGracefulShutdown()
            framedServer?.beginGracefulShutdown()
            startGrace.finish()
            endListening.finish()
        }
        // Asked to stop before the servers existed: they never start.
        if let stopNow = try lifecycle.withLock({ try $0.serversCreated(stop: stop) }) {
            stopNow()
            await closeEverything()
            return
        }
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: ServeTask.self) { group in
                group.addTask {
                    // Each call's handler starts on the event loop that read it (LoopLocalExecutor).
                    try await withTaskExecutorPreference(LoopLocalExecutor.shared) { try await server.serve() }
                    return .server
                }
                if let framedServer {
                    group.addTask {
                        try await framedServer.serve(); return .server
                    }
                }
                group.addTask {
                    try await self.endIdleSessions(); return .housekeeping
                }
                group.addTask {
                    try await self.core.streams.endStalledStreams(); return .housekeeping
                }
                group.addTask {
                    try await self.openUnreachableStores(); return .housekeeping
                }
                group.addTask { [retention = HistoryRetention(configuration, logger: logger)] in
                    try await retention.run(self.core.catalog); return .housekeeping
                }
                group.addTask { [grace = configuration.shutdownGracePeriod] in
                    for await _ in graceStarts {}
                    do { try await Task.sleep(for: grace) } catch { return .housekeeping }
                    return .graceOver
                }
                // Waits for the sockets, unless a stop comes first (a transport stopped before it
                // listened never says where it listens).
                let listening = Task { try await self.listen(transport: transport, framed: framed, guarded: guarded) }
                let listened: Bool
                do {
                    listened = try await Self.unlessStopped(listening, stopped: listeningEnds)
                } catch {
                    server.beginGracefulShutdown()
                    framedServer?.beginGracefulShutdown()
                    throw error
                }
                let metricsServer: MetricsHTTPServer?
                do {
                    metricsServer = listened ? try await startMetricsServer() : nil
                } catch {
                    server.beginGracefulShutdown()
                    framedServer?.beginGracefulShutdown()
                    throw error
                }
                // A stop asked for during start-up keeps the daemon from ever reporting ready.
                if listened, let waiters = try lifecycle.withLock({ try $0.listening() }) {
                    for waiter in waiters { waiter.resume() }
                    logger.info(
                        "modeld \(Self.version) listening on \(configuration.socketPath) (\(core.catalog.count) store(s), data in \(configuration.dataDirectory))"
                    )
                    logger.info(
                        "serving up to \(core.descriptors.maximumConnections) connections and \(core.descriptors.maximumStores) stores (file-descriptor limit \(core.descriptors.limit))"
                    )
                    events.ready?()
                }
                // Until both servers have stopped, or the grace period after a stop has passed.
                var serving = framedServer == nil ? 1 : 2
                while serving > 0 {
                    let ended: ServeTask?
                    do {
                        ended = try await group.next()
                    } catch  where core.rpc.stopping.isSet {
                        // A server stopped before it began serving says so; it has stopped all the same.
                        ended = .server
                    } catch {
                        await metricsServer?.close()
                        throw error
                    }
                    switch ended {
                    case .server: serving -= 1
                    case .graceOver:
                        logger.notice(
                            "closing the connections of calls still under way after the \(configuration.shutdownGracePeriod) grace period"
                        )
                        serving = 0
                    case .housekeeping: continue
                    case nil: serving = 0
                    }
                }
                await metricsServer?.close()
                group.cancelAll()
            }
        } onGracefulShutdown: { [weak self] in
            self?.shutdown()
        }
        await closeEverything()
    }

    /// Every call's interceptors, on both transports. The caller's credentials are set first:
    /// in the other order, a request that does not decode lost its error metadata on HTTP/2.
    static let interceptors: [any ServerInterceptor] = [CallerInterceptor(), ErrorMetadataInterceptor()]

    /// Serves the metrics over HTTP when the configuration asks for it (`--metrics-address`).
    private func startMetricsServer() async throws -> MetricsHTTPServer? {
        guard let address = configuration.metricsAddress else { return nil }
        do {
            let server = try await MetricsHTTPServer.start(address: address) { [core] in
                await core.metrics.exposition(core)
            }
            let host = server.address.ipAddress ?? address
            // An IPv6 address is bracketed in a URL (RFC 3986).
            let urlHost = host.contains(":") ? "[\(host)]" : host
            logger.info("serving metrics at http://\(urlHost):\(server.address.port ?? 0)/metrics")
            return server
        } catch {
            throw DaemonStartError("cannot serve the metrics on \(address): \(error)")
        }
    }

    /// Waits for both sockets to listen and gives them their mode.
    private func listen(transport: HTTP2CallTransport, framed: FramedServerTransport?, guarded: SocketGuard)
        async throws
    {
        do {
            try await transport.waitUntilListening()
            if bindsPath { try guarded.setMode(configuration.socketMode) }
        } catch let error as DaemonStartError {
            throw error
        } catch {
            throw DaemonStartError("cannot listen on \(configuration.socketPath): \(error)")
        }
        guard let framed else { return }
        do {
            try await framed.waitUntilListening()
        } catch {
            throw DaemonStartError("cannot listen on \(framed.path): \(error)")
        }
        guard bindsPath else { return }
        guard chmod(framed.path, mode_t(configuration.socketMode)) == 0 else {
            throw DaemonStartError("cannot set the permissions of \(framed.path): \(String(cString: strerror(errno)))")
        }
    }

    /// `task`'s outcome (true once it succeeded), or false when `stopped` ends first; the task
    /// goes on by itself then.
    private static func unlessStopped(_ task: Task<Void, any Error>, stopped: AsyncStream<Void>) async throws -> Bool {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Bool, any Error>) in
            let once = Mutex(false)
            let finish: @Sendable (Result<Bool, any Error>) -> Void = { outcome in
                if once.withLock({ done in
                    defer { done = true }; return !done
                }) {
                    waiter.resume(with: outcome)
                }
            }
            Task { finish(await task.result.map { true }) }
            Task {
                for await _ in stopped {}
                finish(.success(false))
            }
        }
    }

    /// Closes every session (discarding what it did not save), then every store.
    private func closeEverything() async {
        let closed = await core.sessions.end(where: { _ in true }, reason: "was closed: the daemon stopped")
        await core.catalog.closeAll()
        // Work begun in the background (a dropped store's files emptied) ends before the daemon:
        // a daemon run inside a process (a test's) leaves nothing running in its directory.
        await core.catalog.registry.finishBackgroundWork()
        logger.info("stopped\(closed > 0 ? " (closed \(closed) session(s), discarding what they had not saved)" : "")")
    }

    /// What ended among the tasks that serve.
    private enum ServeTask {
        case server
        case housekeeping
        case graceOver
    }

    private func openStores() async throws {
        for (store, error) in try await core.catalog.openExisting() {
            logger.error("cannot open store \(store): \(error); the other stores are served")
        }
        if let name = configuration.defaultStore, (try? core.catalog.handle(named: name)) == nil {
            do {
                _ = try await core.catalog.create(name: name, backend: configuration.defaultBackend, schema: nil)
            } catch {
                // Said as a start-up failure: the store's own message speaks of saves.
                throw DaemonStartError(
                    "cannot create the '\(name)' store, which --default-store (MODELD_DEFAULT_STORE) asks for, in \(core.catalog.directory.path): \(StoreCatalog.reason(error)) (or start with --default-store '' for none)"
                )
            }
            logger.info("created the '\(name)' store")
        }
    }

    /// The gRPC socket's transport: HTTP/2, with modeld's methods answered on each connection's
    /// event loop (``HTTP2CallTransport``).
    private func makeTransport() -> HTTP2CallTransport {
        HTTP2CallTransport(
            path: configuration.socketPath, boundDescriptor: configuration.listeningSocketDescriptor,
            limits: core.limits, directMethods: .modeld(core: core),
            idleTimeout: configuration.connectionIdleTimeout, gracePeriod: configuration.shutdownGracePeriod)
    }

    /// Opens the stores whose server could not be reached at start-up, trying every few seconds
    /// until none is left (a call naming one tries at once too).
    private func openUnreachableStores() async throws {
        while core.catalog.unreachable.withLock({ !$0.isEmpty }) {
            try await Task.sleep(for: Self.unreachableRetryInterval)
            let before = core.catalog.count
            await core.catalog.openUnreachable()
            let opened = core.catalog.count - before
            if opened > 0 { logger.info("opened \(opened) store(s) whose server could not be reached at start-up") }
        }
    }

    /// How often the stores whose server could not be reached at start-up are tried again.
    static let unreachableRetryInterval = Duration.seconds(2)

    /// Closes sessions idle for longer than the timeout, checking a few times per timeout.
    private func endIdleSessions() async throws {
        let timeout = min(configuration.idleTimeout, configuration.migrationIdleTimeout)
        let interval = min(max(timeout / 4, .milliseconds(10)), .seconds(5))
        while true {
            try await Task.sleep(for: interval)
            let ended = await core.sessions.endIdle()
            if ended > 0 { logger.info("closed \(ended) idle session(s)") }
        }
    }
}
