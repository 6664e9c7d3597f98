import FramedTransport
import GRPCCore
import NIOCore
import NIOHTTP2
import NIOPosix
import Synchronization

/// modeld's gRPC server transport over HTTP/2, on the daemon's main socket. Each connection is
/// NIOHTTP2's handler with its streams as child channels; each stream has one handler of its own
/// (``HTTP2CallHandler``), with no async channel and no task of its own: calls to modeld's
/// methods are read, run and answered on the connection's event loop, as on the framed socket
/// (``DirectMethods``), and every other call is handed to GRPCCore's server as a stream. The
/// limits of the framed socket hold here too (``ConnectionLimits``, ``HTTP2RequestGuard``).
final class HTTP2CallTransport: ServerTransport, Sendable {
    typealias Bytes = [UInt8]

    let path: String
    /// A socket systemd bound and passed, served instead of binding `path`.
    let boundDescriptor: Int32?
    let limits: ConnectionLimits
    let directMethods: DirectMethods
    /// A connection with no stream open for this long is told to go, and closed after the
    /// grace period.
    let idleTimeout: Duration
    let gracePeriod: Duration
    let calls = ServerCalls()
    /// How often connections stopped reading while their calls caught up (``InboundFlow``).
    let inboundFlow = InboundFlowStatistics()
    private let listening = ListeningSignal()
    private let state = Mutex(State())

    private struct State {
        var serverChannel: (any Channel)?
        var isShutdown = false
        var connections: [ObjectIdentifier: any Channel] = [:]
    }

    init(
        path: String, boundDescriptor: Int32?, limits: ConnectionLimits, directMethods: DirectMethods,
        idleTimeout: Duration, gracePeriod: Duration
    ) {
        self.path = path
        self.boundDescriptor = boundDescriptor
        self.limits = limits
        self.directMethods = directMethods
        self.idleTimeout = idleTimeout
        self.gracePeriod = gracePeriod
    }

    /// Returns once the socket listens (or throws why it could not).
    func waitUntilListening() async throws {
        try await listening.wait()
    }

    func listen(streamHandler: @escaping @Sendable (RPCStream<Inbound, Outbound>, ServerContext) async -> Void)
        async throws
    {
        let channel: any Channel
        do {
            channel = try await ServerBootstrap.listener(path: path, descriptor: boundDescriptor, limits: limits) {
                [self] channel, peer in try configure(channel, peer: peer)
            }
        } catch {
            listening.finish(.failure(error))
            throw error
        }
        let stopAtOnce = state.withLock { state in
            state.serverChannel = channel
            return state.isShutdown
        }
        listening.finish(.success(()))
        if stopAtOnce { channel.close(promise: nil) }
        await calls.serve(peer: peer, streamHandler: streamHandler)
        let open = state.withLock { Array($0.connections.values) }
        for connection in open { connection.close(promise: nil) }
        try? await channel.closeFuture.get()
    }

    /// The calls (streams) one HTTP/2 connection may have open at once; clients queue the rest.
    static let maximumConcurrentStreams = 100

    /// A new connection's pipeline: the idle closer, then NIOHTTP2's handler with a call handler
    /// on each stream, then what closes the connection after a connection error.
    private func configure(_ channel: any Channel, peer: PeerCredentials?) throws {
        let connection = HTTP2Connection(transport: self, channel: channel, peer: peer)
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(HTTP2IdleCloser(after: idleTimeout, grace: gracePeriod))
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        // grpc-swift's server settings: its window and frame size; and the streams a connection
        // may have open at once, said (NIOHTTP2 holds a connection to 100 whether it is said or
        // not, and a client not told so sent more: they hung, or were refused).
        connectionConfiguration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.maximumConcurrentStreams),
            HTTP2Setting(parameter: .initialWindowSize, value: 65_535),
            HTTP2Setting(parameter: .maxFrameSize, value: 1 << 14),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
        ]
        _ = try pipeline.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: connectionConfiguration,
            streamConfiguration: NIOHTTP2Handler.StreamConfiguration()
        ) { [limits] stream in
            stream.eventLoop.makeCompletedFuture {
                HTTP2IdleCloser.streamOpened(on: stream)
                try stream.pipeline.syncOperations.addHandlers(
                    HTTP2RequestGuard(limits: limits), HTTP2CallHandler(connection: connection))
            }
        }
        try pipeline.addHandler(HTTP2ConnectionErrorCloser { [self] in state.withLock { $0.isShutdown } })
        let key = ObjectIdentifier(channel)
        let isShutdown = state.withLock { state in
            if !state.isShutdown { state.connections[key] = channel }
            return state.isShutdown
        }
        if isShutdown { return channel.close(promise: nil) }
        channel.closeFuture.whenComplete { [self] _ in _ = state.withLock { $0.connections.removeValue(forKey: key) } }
    }

    /// Stops accepting connections and calls: each connection is told to go (GOAWAY), and calls
    /// under way are told to cancel, as the framed socket does.
    func beginGracefulShutdown() {
        let (channel, open) = state.withLock { state in
            state.isShutdown = true
            return (state.serverChannel, Array(state.connections.values))
        }
        calls.beginShutdown()
        channel?.close(promise: nil)
        for connection in open {
            let goAway = HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
            connection.writeAndFlush(goAway, promise: nil)
        }
    }

    /// The peer every call's context names.
    var peer: String { "unix:" + path }
}

/// What a connection's streams share: the transport, the caller, the flow of request bytes and
/// the executor that runs direct calls on the connection's event loop.
final class HTTP2Connection: Sendable {
    let transport: HTTP2CallTransport
    /// Who connected (`SO_PEERCRED`), given to every call of the connection.
    let peer: PeerCredentials?
    let flow: InboundFlow
    let loopExecutor: EventLoopTaskExecutor

    init(transport: HTTP2CallTransport, channel: any Channel, peer: PeerCredentials?) {
        self.transport = transport
        self.peer = peer
        self.flow = InboundFlow(channel: channel, statistics: transport.inboundFlow)
        self.loopExecutor = EventLoopTaskExecutor(eventLoop: channel.eventLoop)
    }
}
