import FramedTransport
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelWire
import Synchronization

/// A connection to a running `modeld` over its Unix socket: stores, sessions, queries and
/// history, with ModelCore's types in and out. Every error is a `ModelError`: the daemon's own
/// (rebuilt exactly from the status it sent), or `unavailable` when the daemon cannot be reached.
///
/// Use ``withClient(socketPath:_:)`` to connect for the length of a task, or ``connect(socketPath:)``
/// and ``close()`` for a connection that outlives any one scope.
public final class DaemonClient: Sendable {
    /// The socket this client talks to.
    public let socketPath: String
    /// How this client's calls travel.
    public let transport: DaemonTransport
    /// Makes the calls: straight through the framed transport when that is the one in use
    /// (without GRPCCore's per-call machinery), else through GRPCCore.
    let caller: any MethodCaller
    /// An executor on the connection's event loop, on the framed transport (nil on HTTP/2). A task
    /// that runs its calls with it as its preference, as a SwiftData model actor runs on its
    /// context's executor, makes each call without a thread hand-off on the client's side:
    ///
    ///     try await withTaskExecutorPreference(client.preferredExecutor) {
    ///         for id in ids { _ = try await client.objects([id], in: store) }
    ///     }
    ///
    /// Its work between calls runs on the event loop too, which serves the connection's other
    /// calls, so it should be short.
    public let preferredExecutor: (any TaskExecutor)?
    /// On the framed transport, how often this client's streams that run on connections of their
    /// own (a fetch handed over batch by batch, a history, a watch, a backup) stopped reading for
    /// their callers to catch up, and the most bytes one held; nil over HTTP/2, whose flow
    /// control bounds them.
    public let streamFlow: InboundFlowStatistics?
    private let shutdown: @Sendable () -> Void
    /// Whether ``close()`` was called: calls after it fail as `closed`, not as a daemon that
    /// cannot be reached.
    private let isClosed = Atomic<Bool>(false)

    private init<T: ClientTransport>(socketPath: String, transport: DaemonTransport, grpc: GRPCClient<T>, made: T) {
        self.socketPath = socketPath
        self.transport = transport
        let framed = made as? FramedClientTransport
        let general = GRPCMethodCaller(client: grpc)
        caller = framed.map { FramedMethodCaller(transport: $0, general: general) } ?? general
        preferredExecutor = framed?.executor
        streamFlow = framed?.responseFlow
        shutdown = {
            grpc.beginGracefulShutdown()
            // gRPC's client passes the shutdown on only if its connections had started running,
            // which a client that made only direct calls may not have waited for.
            framed?.beginGracefulShutdown()
        }
    }

    /// Connects to the daemon at `socketPath` for the length of `body`, over `transport` (by
    /// default ``DaemonTransport/preferred(socketPath:environment:)``).
    public static func withClient<T: Sendable>(
        socketPath: String, transport: DaemonTransport? = nil,
        _ body: (DaemonClient) async throws -> T
    ) async throws -> T {
        let chosen = transport ?? .preferred(socketPath: socketPath)
        func run<Made: ClientTransport>(_ made: Made) async throws -> T {
            // As withGRPCClient, except that a gRPC client shut down before its connections
            // started running (when the body made only direct calls) ends quietly.
            try await withThrowingDiscardingTaskGroup { group in
                let grpc = GRPCClient(transport: made)
                group.addTask { try await Self.runConnections(grpc) }
                let client = DaemonClient(socketPath: socketPath, transport: chosen, grpc: grpc, made: made)
                let result = try await body(client)
                client.close()
                return result
            }
        }
        switch try makeTransport(socketPath, chosen) {
        case .framed(let framed): return try await run(framed)
        case .http2(let http2): return try await run(http2)
        }
    }

    /// Connects to the daemon at `socketPath` until ``close()``.
    public static func connect(socketPath: String, transport: DaemonTransport? = nil) throws -> DaemonClient {
        let chosen = transport ?? .preferred(socketPath: socketPath)
        // The connection must outlive the caller's scope (as a SwiftData container does), so it
        // runs in a task of its own, which close() ends.
        func start(_ made: some ClientTransport) -> DaemonClient {
            let grpc = GRPCClient(transport: made)
            Task { try? await Self.runConnections(grpc) }
            return DaemonClient(socketPath: socketPath, transport: chosen, grpc: grpc, made: made)
        }
        switch try makeTransport(socketPath, chosen) {
        case .framed(let framed): return start(framed)
        case .http2(let http2): return start(http2)
        }
    }

    /// Ends a connection made with ``connect(socketPath:transport:)``, after calls under way
    /// finish; calls after it fail with `closed`.
    public func close() {
        isClosed.store(true, ordering: .releasing)
        shutdown()
    }

    /// Runs the gRPC client's connections until it shuts down; one shut down before they started
    /// has nothing to run.
    private static func runConnections(_ grpc: GRPCClient<some ClientTransport>) async throws {
        do {
            try await grpc.runConnections()
        } catch let error as RuntimeError where error.code == .clientIsStopped {
            return
        }
    }

    /// The largest response the client accepts.
    public static let maximumResponseSize = 64 * 1024 * 1024

    private enum MadeTransport {
        case framed(FramedClientTransport)
        case http2(HTTP2ClientTransport.Posix)
    }

    /// Refuses the per-user socket in /tmp when its directory is not the user's own: another
    /// user may have made it first to serve a daemon of their own
    /// (``DefaultLocations/untrustedFallbackDirectory(of:userID:)``).
    static func checkTrusted(_ socketPath: String) throws(ModelError) {
        guard let reason = DefaultLocations.untrustedFallbackDirectory(of: socketPath, userID: geteuid()) else {
            return
        }
        throw ModelError(
            .permissionDenied,
            "will not connect to \(socketPath): \(reason), so another user may be serving it; remove that directory (modeld makes it again, private), set XDG_RUNTIME_DIR, or name a socket",
            context: ["socket": socketPath])
    }

    private static func makeTransport(_ socketPath: String, _ transport: DaemonTransport) throws(ModelError)
        -> MadeTransport
    {
        guard socketPath.utf8.count <= 107 else {
            throw ModelError(
                .invalidArgument,
                "the socket path \(socketPath) is longer than 107 bytes, which a Unix socket cannot be")
        }
        try checkTrusted(socketPath)
        if transport == .framed {
            guard let framed = DefaultLocations.framedSocketPath(for: socketPath) else {
                throw ModelError(
                    .invalidArgument,
                    "the framed socket beside \(socketPath) would be longer than 107 bytes: use the http2 transport")
            }
            return .framed(FramedClientTransport(path: framed))
        }
        // Fail at once when the daemon is not there, rather than wait for it to appear.
        // (The transport takes its limit on responses from maxRequestMessageBytes.)
        let everything = MethodConfig(
            names: [MethodConfig.Name(service: "")], waitForReady: false,
            maxRequestMessageBytes: maximumResponseSize, maxResponseMessageBytes: maximumResponseSize)
        do {
            return .http2(
                try HTTP2ClientTransport.Posix(
                    target: .unixDomainSocket(path: socketPath), transportSecurity: .plaintext,
                    // No flush held back for company (100 µs by default): the daemon answers
                    // sooner than that.
                    config: .defaults { $0.connection.flushCoalescing = nil },
                    serviceConfig: ServiceConfig(methodConfig: [everything])))
        } catch {
            throw ModelError(.invalidArgument, "cannot use the socket \(socketPath): \(error)")
        }
    }

    // MARK: Calls

    /// Runs one call; its errors come out as `ModelError`s. A call that could not be sent because
    /// the connection is (re)connecting is tried again a few times over a few hundred
    /// milliseconds: it never reached the daemon, so trying again is safe.
    ///
    /// `small` says the request cannot be over the daemon's smallest message size limit (64 KiB),
    /// so a reset stream is not the size limit but the daemon ending the call (when it stops).
    nonisolated(nonsending) func call<T>(small: Bool = false, _ body: nonisolated(nonsending) () async throws -> T)
        async throws -> T
    {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch let error as RPCError where Self.wasNotSent(error) && attempt < Self.resendAttempts {
                attempt += 1
                try await Task.sleep(for: .milliseconds(30 * attempt))
            } catch {
                throw translateAny(error, small: small)
            }
        }
    }

    static let resendAttempts = 5

    /// Whether a call failed before it left the client (no connection ready).
    static func wasNotSent(_ error: RPCError) -> Bool {
        error.code == .unavailable
            && (error.message.contains("isn't ready") || error.message.contains("no subchannel")
                || error.message.contains("the call was not sent"))
    }

    func translateAny(_ error: any Error, small: Bool) -> any Error {
        if isClosed.load(ordering: .acquiring), !(error is ModelError), (error as? RPCError)?.isFromDaemon != true {
            return ModelError(
                .closed,
                "this connection to modeld at \(socketPath) was closed (by its client's close(), or its container's); open a new one to use the store",
                context: ["socket": socketPath])
        }
        do {
            throw error
        } catch let error as RPCError {
            return translate(error, small: small)
        } catch let error as RuntimeError {
            return ModelError(
                .unavailable, "cannot talk to modeld at \(socketPath): \(error.message); is modeld running?",
                context: ["socket": socketPath, "detail": error.message])
        } catch {
            return error
        }
    }

    func translate(_ error: RPCError, small: Bool = false) -> ModelError {
        Self.translate(error, socketPath: socketPath, small: small)
    }

    /// A call's error as a `ModelError`: the daemon's own as it sent it, the transport's
    /// explained (a reset stream, an unreachable daemon).
    static func translate(_ error: RPCError, socketPath: String, small: Bool) -> ModelError {
        let fromDaemon = error.isFromDaemon
        if !fromDaemon, error.message.contains("RST_STREAM") {
            if small {
                return ModelError(
                    .unavailable,
                    "modeld at \(socketPath) ended the call without answering; it may be stopping (\(error.message))",
                    context: ["socket": socketPath, "detail": error.message])
            }
            // The transport resets a call whose request is over the daemon's size limit, before
            // any of modeld's code sees it.
            return ModelError(
                .resourceExhausted,
                "modeld reset the call before answering it; most likely the request is larger than its maximum message size (modeld --max-message-size, 16 MiB by default): send less at a time (\(error.message))",
                context: ["socket": socketPath, "detail": error.message])
        }
        if !fromDaemon, error.code == .unavailable {
            return ModelError(
                .unavailable, "cannot reach modeld at \(socketPath): is modeld running? (\(error.message))",
                context: ["socket": socketPath, "detail": error.message])
        }
        return ModelError(error)
    }
}

extension RPCError {
    /// Whether modeld sent it (with its error code), rather than the transport.
    var isFromDaemon: Bool { metadata[stringValues: ModelError.codeMetadataKey].contains { _ in true } }
}
