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
    private let newStreams: AsyncStream<AcceptedStream>
    private let newStreamsContinuation: AsyncStream<AcceptedStream>.Continuation
    private let state = Mutex(State())
    private let listening: Mutex<[CheckedContinuation<Void, any Error>]?> = Mutex([])

    private struct State {
        var isShutdown = false
        var serverChannel: (any Channel)?
        var streams: [ObjectIdentifier: ServerStreamRecord] = [:]
        var directCalls = 0
        var directCallsDone: [CheckedContinuation<Void, Never>] = []
    }

    /// A transport that will listen on `path` (replacing a file there) under `limits`: messages
    /// over their size are refused with `resourceExhausted`, and so on (``ConnectionLimits``).
    /// Calls to `directMethods` are run by the transport itself (``DirectMethods``).
    ///
    /// With `boundDescriptor` (a listening socket at `path` that systemd made, under socket
    /// activation), it serves that socket instead of binding one.
    /// How often connections stopped reading while their calls caught up (``InboundFlow``).
    public let inboundFlow = InboundFlowStatistics()

    public init(
        path: String, limits: ConnectionLimits, directMethods: DirectMethods = DirectMethods(),
        boundDescriptor: Int32? = nil
    ) {
        self.path = path
        self.boundDescriptor = boundDescriptor
        self.limits = limits
        self.directMethods = directMethods
        (newStreams, newStreamsContinuation) = AsyncStream.makeStream()
    }

    /// Returns once the socket listens (or throws why it could not).
    public func waitUntilListening() async throws {
        try await withCheckedThrowingContinuation { continuation in
            let ready = listening.withLock { waiters -> Bool in
                guard waiters != nil else { return true }
                waiters?.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func finishListening(_ result: Result<Void, any Error>) {
        let waiters = listening.withLock { waiters in
            defer { waiters = nil }
            return waiters ?? []
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    public func listen(streamHandler: @escaping @Sendable (RPCStream<Inbound, Outbound>, ServerContext) async -> Void)
        async throws
    {
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelInitializer { channel in
                    // Out of file descriptors, accepting waits a moment rather than spinning.
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler())
                    }
                }
                .childChannelInitializer { [self] channel in
                    PeerCredentials.of(channel).flatMapThrowing { [self] peer in
                        guard limits.connections.admit(channel) else { return }
                        try channel.pipeline.syncOperations.addHandler(
                            ServerConnectionHandler(transport: self, peer: peer))
                    }
                }
                .bindOrAdopt(path: path, descriptor: boundDescriptor).get()
        } catch {
            finishListening(.failure(error))
            throw error
        }
        let stopAtOnce = state.withLock { state in
            state.serverChannel = channel
            return state.isShutdown
        }
        finishListening(.success(()))
        if stopAtOnce { channel.close(promise: nil) }
        let peer = "unix:" + path
        await withDiscardingTaskGroup { group in
            for await accepted in newStreams {
                group.addTask {
                    await withServerContextRPCCancellationHandle { handle in
                        let key = ObjectIdentifier(accepted.record)
                        let isShutdown = self.state.withLock { state in
                            state.streams[key] = accepted.record
                            return state.isShutdown
                        }
                        defer { _ = self.state.withLock { $0.streams.removeValue(forKey: key) } }
                        accepted.record.attach(handle)
                        if isShutdown { handle.cancel() }
                        let context = ServerContext(
                            descriptor: accepted.stream.descriptor, remotePeer: peer, localPeer: peer,
                            cancellation: handle)
                        await PeerCredentials.$current.withValue(accepted.peer ?? .unknown) {
                            await streamHandler(accepted.stream, context)
                        }
                    }
                }
            }
        }
        await withCheckedContinuation { done in
            let idle = state.withLock { state in
                if state.directCalls > 0 { state.directCallsDone.append(done) }
                return state.directCalls == 0
            }
            if idle { done.resume() }
        }
        try? await channel.closeFuture.get()
    }

    /// Counts a direct call in, so that shutdown cancels it and waits for it; false (and not
    /// counted) once the transport is shutting down.
    func admitDirectCall(_ record: ServerStreamRecord) -> Bool {
        state.withLock { state in
            guard !state.isShutdown else { return false }
            state.streams[ObjectIdentifier(record)] = record
            state.directCalls += 1
            return true
        }
    }

    /// Counts in a call answered at once on the calling thread (which cannot be cancelled), so
    /// that shutdown waits for it; false (and not counted) once the transport is shutting down.
    func admitImmediateCall() -> Bool {
        state.withLock { state in
            guard !state.isShutdown else { return false }
            state.directCalls += 1
            return true
        }
    }

    func immediateCallEnded() {
        directCallEnded(nil)
    }

    func directCallEnded(_ record: ServerStreamRecord?) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let record { state.streams.removeValue(forKey: ObjectIdentifier(record)) }
            state.directCalls -= 1
            guard state.directCalls == 0 else { return [] }
            defer { state.directCallsDone = [] }
            return state.directCallsDone
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Stops accepting connections and calls; calls under way are told to cancel, as HTTP/2's
    /// graceful shutdown does.
    public func beginGracefulShutdown() {
        let (channel, streams) = state.withLock { state in
            state.isShutdown = true
            return (state.serverChannel, Array(state.streams.values))
        }
        newStreamsContinuation.finish()
        channel?.close(promise: nil)
        for stream in streams { stream.cancel() }
    }

    var isShutdown: Bool { state.withLock { $0.isShutdown } }

    /// Hands a new call to ``listen(streamHandler:)``; false once the transport is shutting down.
    func accept(_ stream: RPCStream<Inbound, Outbound>, record: ServerStreamRecord, peer: PeerCredentials?) -> Bool {
        guard !isShutdown,
            case .enqueued = newStreamsContinuation.yield(AcceptedStream(stream: stream, record: record, peer: peer))
        else { return false }
        return true
    }
}

struct AcceptedStream: Sendable {
    let stream: RPCStream<FramedServerTransport.Inbound, FramedServerTransport.Outbound>
    let record: ServerStreamRecord
    /// The caller: its connection's peer credentials.
    let peer: PeerCredentials?
}

/// One call on the server: its request parts' continuation (none for a direct call, which
/// collects its request itself) and its cancellation handle.
final class ServerStreamRecord: Sendable {
    let requests: AsyncThrowingStream<RPCRequestPart<[UInt8]>, any Error>.Continuation?
    /// Its messages' bytes not yet taken by its handler (see ``InboundFlow``).
    let unread = UnreadBytes()
    private let handle = Mutex<(handle: ServerContext.RPCCancellationHandle?, cancelled: Bool)>((nil, false))

    init(requests: AsyncThrowingStream<RPCRequestPart<[UInt8]>, any Error>.Continuation?) {
        self.requests = requests
    }

    func attach(_ handle: ServerContext.RPCCancellationHandle) {
        let cancelled = self.handle.withLock { state in
            state.handle = handle
            return state.cancelled
        }
        if cancelled { handle.cancel() }
    }

    func cancel() {
        let handle = self.handle.withLock { state in
            state.cancelled = true
            return state.handle
        }
        handle?.cancel()
    }
}

extension ServerBootstrap {
    /// Binds `path` (replacing a socket file there), or serves `descriptor`, a socket already
    /// bound and listening there.
    fileprivate func bindOrAdopt(path: String, descriptor: Int32?) -> EventLoopFuture<any Channel> {
        if let descriptor { return withBoundSocket(descriptor) }
        return bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
    }
}
