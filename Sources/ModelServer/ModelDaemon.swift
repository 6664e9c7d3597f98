import Foundation
import FramedTransport
import GRPCCore
import GRPCNIOTransportHTTP2
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
    public static let version = "0.1.0"

    public let configuration: ServerConfiguration
    let core: DaemonCore
    private let events: DaemonEvents
    private let phase = Mutex(Phase.created)
    /// Set once the server exists, so that ``shutdown()`` can stop it.
    private let stopServer = Mutex<(@Sendable () -> Void)?>(nil)
    private let shutdownRequested = Mutex(false)

    private enum Phase {
        case created
        case starting(waiters: [CheckedContinuation<Void, any Error>])
        case ready
        case stopping
        case stopped
        case failed(String)
    }

    public init(configuration: ServerConfiguration, logger: Logger = Logger(label: "modeld"), events: DaemonEvents = DaemonEvents()) {
        self.configuration = configuration
        self.core = DaemonCore(configuration: configuration, logger: logger)
        self.events = events
    }

    private var logger: Logger { core.logger }
    private var bindsPath: Bool { configuration.listeningSocketDescriptor == nil }

    public func run() async throws {
        phase.withLock { if case .created = $0 { $0 = .starting(waiters: []) } }
        do {
            try await serve()
            finish(.stopped)
        } catch {
            finish(.failed("\(error)"))
            throw error
        }
    }

    /// Returns once the daemon listens; throws if it failed to start or has stopped.
    public func waitUntilReady() async throws {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            let outcome: Result<Void, DaemonStartError>? = phase.withLock { phase in
                switch phase {
                case .created: phase = .starting(waiters: [waiter]); return nil
                case .starting(var waiters): waiters.append(waiter); phase = .starting(waiters: waiters); return nil
                case .ready: return .success(())
                case .stopping, .stopped: return .failure(DaemonStartError("the daemon has stopped"))
                case .failed(let why): return .failure(DaemonStartError(why))
                }
            }
            if let outcome { waiter.resume(with: outcome.mapError { $0 as any Error }) }
        }
    }

    /// Begins a graceful shutdown, as SIGTERM does under a `ServiceGroup`: calls under way
    /// finish, then sessions and stores close and ``run()`` returns.
    public func shutdown() {
        shutdownRequested.withLock { $0 = true }
        stopServer.withLock { $0 }?()
    }

    /// A line about the daemon's load, for systemd's `STATUS=`.
    public var statusLine: String {
        "Serving \(core.catalog.count) store(s), \(core.sessions.count) session(s) on \(configuration.socketPath)"
    }

    /// Whether the daemon is serving (for the health service).
    public var isServing: Bool {
        phase.withLock { if case .ready = $0 { true } else { false } }
    }

    private func finish(_ end: Phase) {
        let waiters = phase.withLock { phase -> [CheckedContinuation<Void, any Error>] in
            defer { phase = end }
            if case .starting(let waiters) = phase { return waiters }
            return []
        }
        let why: String = if case .failed(let text) = end { text } else { "the daemon stopped before it was ready" }
        for waiter in waiters { waiter.resume(throwing: DaemonStartError(why)) }
    }

    private func markReady() {
        let waiters = phase.withLock { phase -> [CheckedContinuation<Void, any Error>] in
            defer { phase = .ready }
            if case .starting(let waiters) = phase { return waiters }
            return []
        }
        for waiter in waiters { waiter.resume() }
    }

    private func serve() async throws {
        let guarded = try SocketGuard.acquire(dataDirectory: configuration.dataDirectory, socketPath: configuration.socketPath,
                                              bindsPath: bindsPath)
        defer { guarded.release(removeSocket: bindsPath) }
        try await openStores()

        let transport = makeTransport()
        let services: () -> [any RegistrableRPCService] = { [core] in
            [StoreServiceHandler(core: core), SessionServiceHandler(core: core), QueryServiceHandler(core: core),
             DaemonServiceHandler(core: core), HealthServiceHandler(isServing: { [weak self] in self?.isServing ?? false })]
        }
        let server = GRPCServer(transport: transport, services: services())
        // The same services in modeld's framing, on a socket of their own beside the gRPC one
        // (not under socket activation, where systemd hands over only the gRPC socket).
        let framed = bindsPath ? DefaultLocations.framedSocketPath(for: configuration.socketPath).map {
            FramedServerTransport(path: $0, limits: core.limits, directMethods: .modeld(core: core))
        } : nil
        let framedServer = framed.map { GRPCServer(transport: $0, services: services()) }
        defer { if let framed { unlink(framed.path) } }
        let (stopRequested, requestStop) = AsyncStream<Void>.makeStream()
        let stop: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            phase.withLock { $0 = .stopping }
            logger.info("shutting down: ending streams, finishing calls under way (at most \(configuration.shutdownGracePeriod))")
            events.stopping?()
            core.rpc.stopping.set()
            core.streams.endAll()
            server.beginGracefulShutdown()
            framedServer?.beginGracefulShutdown()
            requestStop.finish()
        }
        stopServer.withLock { $0 = stop }
        if shutdownRequested.withLock({ $0 }) { stop() }
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: ServeTask.self) { group in
                group.addTask { try await server.serve(); return .server }
                if let framedServer { group.addTask { try await framedServer.serve(); return .server } }
                group.addTask { try await self.endIdleSessions(); return .housekeeping }
                group.addTask { try await self.core.streams.endStalledStreams(); return .housekeeping }
                group.addTask { [grace = configuration.shutdownGracePeriod] in
                    for await _ in stopRequested {}
                    do { try await Task.sleep(for: grace) } catch { return .housekeeping }
                    return .graceOver
                }
                do {
                    _ = try await transport.listeningAddress
                    if bindsPath { try guarded.setMode(configuration.socketMode) }
                    if let framed {
                        do {
                            try await framed.waitUntilListening()
                        } catch {
                            throw DaemonStartError("cannot listen on \(framed.path): \(error)")
                        }
                        guard chmod(framed.path, mode_t(configuration.socketMode)) == 0 else {
                            throw DaemonStartError("cannot set the permissions of \(framed.path): \(String(cString: strerror(errno)))")
                        }
                    }
                } catch let error as DaemonStartError {
                    server.beginGracefulShutdown()
                    framedServer?.beginGracefulShutdown()
                    throw error
                } catch {
                    server.beginGracefulShutdown()
                    framedServer?.beginGracefulShutdown()
                    throw DaemonStartError("cannot listen on \(configuration.socketPath): \(error)")
                }
                markReady()
                logger.info("modeld \(Self.version) listening on \(configuration.socketPath) (\(core.catalog.count) store(s), data in \(configuration.dataDirectory))")
                logger.info("serving up to \(core.descriptors.maximumConnections) connections and \(core.descriptors.maximumStores) stores (file-descriptor limit \(core.descriptors.limit))")
                events.ready?()
                // Until both servers have stopped, or the grace period after a stop has passed.
                var serving = framedServer == nil ? 1 : 2
                while serving > 0, let ended = try await group.next() {
                    switch ended {
                    case .server: serving -= 1
                    case .graceOver:
                        logger.notice("closing the connections of calls still under way after the \(configuration.shutdownGracePeriod) grace period")
                        serving = 0
                    case .housekeeping: continue
                    }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            stop()
        }
        let closed = await core.sessions.end(where: { _ in true }, reason: "was closed: the daemon stopped")
        await core.catalog.closeAll()
        logger.info("stopped\(closed > 0 ? " (closed \(closed) session(s), discarding what they had not saved)" : "")")
    }

    /// What ended among the tasks that serve.
    private enum ServeTask {
        case server
        case housekeeping
        case graceOver
    }

    private func openStores() async throws {
        for (file, error) in try await core.catalog.openExisting() {
            logger.error("cannot open store file \(file): \(error); the other stores are served")
        }
        if let name = configuration.defaultStore, (try? core.catalog.handle(named: name)) == nil {
            _ = try await core.catalog.create(name: name, kind: .sqlite, schema: nil)
            logger.info("created the '\(name)' store")
        }
    }

    private func makeTransport() -> HTTP2ServerTransport.Posix {
        let limits = core.limits
        let config = HTTP2ServerTransport.Posix.Config.defaults { config in
            config.rpc.maxRequestPayloadSize = configuration.maximumMessageSize
            config.connection.maxIdleTime = configuration.connectionIdleTimeout
            // A connection closed for idleness is told so (GOAWAY) and closed once its client
            // acknowledges, or after this long if it never does.
            config.connection.maxGraceTime = configuration.shutdownGracePeriod
            let closesIdleAfter = configuration.connectionIdleTimeout + configuration.shutdownGracePeriod
            config.channelDebuggingCallbacks.onAcceptTCPConnection = { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard limits.connections.admit(channel) else { return }
                    try channel.pipeline.syncOperations.addHandler(HTTP2IdleCloser(after: closesIdleAfter), position: .first)
                }
            }
            config.channelDebuggingCallbacks.onAcceptHTTP2Stream = { channel in
                channel.eventLoop.makeCompletedFuture {
                    HTTP2IdleCloser.streamOpened(on: channel)
                    try channel.pipeline.syncOperations.addHandler(HTTP2RequestGuard(limits: limits), position: .first)
                }
            }
        }
        if let descriptor = configuration.listeningSocketDescriptor {
            return HTTP2ServerTransport.Posix(listeningSocketDescriptor: Int(descriptor), transportSecurity: .plaintext, config: config)
        }
        return HTTP2ServerTransport.Posix(address: .unixDomainSocket(path: configuration.socketPath), transportSecurity: .plaintext,
                                          config: config)
    }

    /// Closes sessions idle for longer than the timeout, checking a few times per timeout.
    private func endIdleSessions() async throws {
        let timeout = configuration.idleTimeout
        let interval = min(max(timeout / 4, .milliseconds(10)), .seconds(5))
        while true {
            try await Task.sleep(for: interval)
            let ended = await core.sessions.endIdle()
            if ended > 0 { logger.info("closed \(ended) idle session(s)") }
        }
    }
}
