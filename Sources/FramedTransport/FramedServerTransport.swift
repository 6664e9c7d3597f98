import Foundation
import GRPCCore
import NIOCore
import NIOPosix
import Synchronization

/// A gRPC server transport on a Unix socket that speaks modeld's framing (``Frame``) rather than
/// HTTP/2: the same services, deadlines, metadata, statuses and cancellation, for the clients
/// that know it (the Swift client and `modelctl`), with far less work per call.
public final class FramedServerTransport: ServerTransport, Sendable {
    public typealias Bytes = [UInt8]

    public let path: String
    /// A socket systemd bound and passed, served instead of binding `path`.
    public let boundDescriptor: Int32?
    let limits: ConnectionLimits
    let directMethods: DirectMethods
    /// The metadata of a status the transport gives itself (a request over the size limit, one
    /// that did not arrive in time): what a call's own errors carry beside their status.
    let refusalMetadata: @Sendable (Status) -> Metadata
    /// The calls taken in: handed to GRPCCore's server, or run directly.
    let calls = ServerCalls()
    private let serverAcceptor = Mutex<(acceptor: SocketAcceptor?, isShutdown: Bool)>((nil, false))
    private let listening = ListeningSignal()
    /// How often connections stopped reading while their calls caught up (``InboundFlow``).
    public let inboundFlow = InboundFlowStatistics()
    /// How many connections each event loop serves (``TurnEndFlush``).
    let loopConnections = LoopConnectionsRegistry()

    /// A transport that will listen on `path` (replacing a file there) under `limits`: messages
    /// over their size are refused with `resourceExhausted`, and so on (``ConnectionLimits``).
    /// Calls to `directMethods` are run by the transport itself (``DirectMethods``).
    ///
    /// With `boundDescriptor` (a listening socket at `path` that systemd made, under socket
    /// activation), it serves that socket instead of binding one. The statuses the transport
    /// gives itself carry `refusalMetadata` of them.
    public init(
        path: String, limits: ConnectionLimits, directMethods: DirectMethods = DirectMethods(),
        boundDescriptor: Int32? = nil, refusalMetadata: @escaping @Sendable (Status) -> Metadata = { _ in [:] }
    ) {
        self.path = path
        self.boundDescriptor = boundDescriptor
        self.limits = limits
        self.directMethods = directMethods
        self.refusalMetadata = refusalMetadata
    }

    /// Returns once the socket listens (or throws why it could not).
    public func waitUntilListening() async throws {
        try await listening.wait()
    }

    public func listen(streamHandler: @escaping @Sendable (RPCStream<Inbound, Outbound>, ServerContext) async -> Void)
        async throws
    {
        let acceptor: SocketAcceptor
        do {
            acceptor = try boundDescriptor.map(SocketAcceptor.adopting) ?? SocketAcceptor.bound(to: path)
        } catch {
            listening.finish(.failure(error))
            throw error
        }
        let stopAtOnce = serverAcceptor.withLock { state in
            state.acceptor = acceptor
            return state.isShutdown
        }
        acceptor.start { [self] socket in serve(socket) }
        listening.finish(.success(()))
        if stopAtOnce { acceptor.stop() }
        await calls.serve(peer: "unix:" + path, streamHandler: streamHandler)
        await acceptor.waitUntilStopped()
    }

    /// Serves a connection just accepted: past the connection limit it is closed at once;
    /// otherwise SwiftNIO takes the socket, with a handler that knows its descriptor.
    private func serve(_ socket: CInt) {
        let peer = PeerCredentials.of(descriptor: socket)
        guard limits.connections.admit() else {
            close(socket)
            return
        }
        let connections = limits.connections
        ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ServerConnectionHandler(transport: self, peer: peer, socket: socket))
                }
            }
            .withConnectedSocket(socket)
            .whenComplete { result in
                switch result {
                case .success(let channel): channel.closeFuture.whenComplete { _ in connections.closed() }
                case .failure: connections.closed()
                }
            }
    }

    /// Stops accepting connections and calls; calls under way are told to cancel, as HTTP/2's
    /// graceful shutdown does.
    public func beginGracefulShutdown() {
        let acceptor = serverAcceptor.withLock { state in
            state.isShutdown = true
            return state.acceptor
        }
        calls.beginShutdown()
        acceptor?.stop()
    }

    var isShutdown: Bool { calls.isShutdown }
}

extension ServerBootstrap {
    /// A listening Unix socket at `path` (or `descriptor`, bound there already), on the shared
    /// event loops: a connection the connection limit admits (``ConnectionLimits``) is handed to
    /// `configure` with its peer credentials; out of file descriptors, accepting waits a moment
    /// rather than spinning.
    package static func listener(
        path: String, descriptor: Int32?, limits: ConnectionLimits,
        configure: @escaping @Sendable (any Channel, PeerCredentials?) throws -> Void
    ) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler())
                }
            }
            .childChannelInitializer { channel in
                PeerCredentials.of(channel).flatMapThrowing { peer in
                    guard limits.connections.admit(channel) else { return }
                    try configure(channel, peer)
                }
            }
            .bindOrAdopt(path: path, descriptor: descriptor).get()
    }

    /// Binds `path` (replacing a socket file there), or serves `descriptor`, a socket already
    /// bound and listening there.
    private func bindOrAdopt(path: String, descriptor: Int32?) -> EventLoopFuture<any Channel> {
        if let descriptor { return withBoundSocket(descriptor) }
        return bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
    }
}

/// Tells those waiting for a server's socket that it listens, or why it could not.
package final class ListeningSignal: Sendable {
    private let waiters: Mutex<[CheckedContinuation<Void, any Error>]?> = Mutex([])

    package init() {}

    /// Returns once ``finish(_:)`` has been called (at once if it has).
    package func wait() async throws {
        try await withCheckedThrowingContinuation { continuation in
            let ready = waiters.withLock { waiters -> Bool in
                guard waiters != nil else { return true }
                waiters?.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    package func finish(_ result: Result<Void, any Error>) {
        let waiting = waiters.withLock { waiters in
            defer { waiters = nil }
            return waiters ?? []
        }
        for waiter in waiting { waiter.resume(with: result) }
    }
}
