import GRPCCore
import NIOCore
import NIOPosix
import Synchronization

/// The client side of modeld's framed transport (``FramedServerTransport``): one Unix socket
/// connection, opened on the first call and again after it drops, with calls multiplexed on it.
public final class FramedClientTransport: ClientTransport, Sendable {
    public typealias Bytes = [UInt8]

    public let path: String
    /// The event loop the connection runs on (every connection this transport opens).
    let eventLoop: any EventLoop
    private let loopExecutor: EventLoopTaskExecutor
    private let state = Mutex(State())
    private let stopped: AsyncStream<Void>
    private let stop: AsyncStream<Void>.Continuation
    /// How often calls on connections of their own
    /// (``serverStreamingOnOwnConnection(_:request:_:)``) stopped reading for their callers to
    /// catch up, and the most bytes one held.
    public let responseFlow = InboundFlowStatistics()

    private struct State {
        var connection: EventLoopFuture<FramedClientConnection>?
        /// `connection`'s handler once it connected: a call takes it without awaiting the
        /// future, which cost a continuation and a job on the loop (a quarter of a point read's
        /// instructions on this side).
        var connected: FramedClientConnection?
        var isShutdown = false
        var openCalls = 0
    }

    public init(path: String) {
        self.path = path
        eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        loopExecutor = EventLoopTaskExecutor(eventLoop: eventLoop)
        (stopped, stop) = AsyncStream.makeStream()
    }

    /// Runs tasks on the connection's event loop. A task that prefers it
    /// (`withTaskExecutorPreference`) makes its direct calls without a thread hand-off on this
    /// side: the request is written from the loop, and the task resumes there when the answer
    /// is read, where otherwise the loop is woken to write and a shared thread to resume. Work
    /// between calls then runs on the loop too, so keep it short.
    public var executor: any TaskExecutor { loopExecutor }

    public var retryThrottle: RetryThrottle? { nil }

    public func config(forMethod descriptor: MethodDescriptor) -> MethodConfig? { nil }

    /// Runs until a graceful shutdown has let the calls under way finish.
    public func connect() async throws {
        for await _ in stopped {}
    }

    /// Lets the calls under way finish, then closes the connection. (Direct unary calls do not
    /// need ``connect()`` to run, so the connection is closed here rather than there.)
    public func beginGracefulShutdown() {
        let idle = state.withLock { state in
            state.isShutdown = true
            return state.openCalls == 0
        }
        if idle { finishShutdown() }
    }

    /// The last call after shutdown has ended: the connection closes and ``connect()`` returns.
    private func finishShutdown() {
        let connection = state.withLock { $0.connection }
        connection?.whenSuccess { handler in handler.channel.close(promise: nil) }
        stop.finish()
    }

    public func withStream<T: Sendable>(
        descriptor: MethodDescriptor, options: CallOptions,
        _ closure: (RPCStream<Inbound, Outbound>, ClientContext) async throws -> T
    ) async throws -> T {
        let connection = try beginCall()
        defer { callEnded() }
        let (handler, (id, responses)) = try await registered(on: connection) { $0.register() }
        let holdsRequest = descriptor.type == .unary || descriptor.type == .serverStreaming
        let writer = ClientFrameWriter(
            channel: handler.channel, stream: id, path: "\(descriptor.service)/\(descriptor.method)",
            holdsUntilFinished: holdsRequest)
        let peer = "unix:" + path
        let stream = RPCStream(
            descriptor: descriptor, inbound: RPCAsyncSequence(wrapping: responses),
            outbound: RPCWriter.Closable(wrapping: writer))
        defer {
            if handler.unregister(id) { writer.cancel() }
        }
        return try await closure(stream, ClientContext(descriptor: descriptor, remotePeer: peer, localPeer: peer))
    }

    /// Counts a call in that goes on a connection of its own.
    func countCall() throws {
        try state.withLock { state in
            guard !state.isShutdown else { throw RPCError(code: .unavailable, message: "the client is shutting down") }
            state.openCalls += 1
        }
    }

    /// Counts a call in and returns the connection it goes on (opened if there is none).
    func beginCall() throws -> EventLoopFuture<FramedClientConnection> {
        let (connection, isNew) = try state.withLock { state in
            guard !state.isShutdown else { throw RPCError(code: .unavailable, message: "the client is shutting down") }
            state.openCalls += 1
            if let connection = state.connection { return (connection, false) }
            let connection = Self.open(path, on: eventLoop)
            state.connection = connection
            return (connection, true)
        }
        // Outside the lock: on the loop, a connection made at once runs this callback here.
        if isNew {
            connection.whenSuccess { [weak self] handler in
                self?.state.withLock { state in
                    if state.connection === connection { state.connected = handler }
                }
            }
        }
        return connection
    }

    /// The connection's handler once it is connected, and what `register` registered a new call
    /// on it as; a connection that failed, or closed before the call could be registered, is
    /// forgotten (the next call opens a new one) and the call fails with `unavailable`.
    nonisolated(nonsending) func registered<Call>(
        on connection: EventLoopFuture<FramedClientConnection>,
        _ register: (FramedClientConnection) -> Call?
    ) async throws -> (FramedClientConnection, Call) {
        if let known = try registeredAtOnce(on: connection, register) { return known }
        return try await registeredOnceConnected(connection, register)
    }

    /// ``registered(on:_:)`` for a connection still being made: waits for it.
    nonisolated(nonsending) func registeredOnceConnected<Call>(
        _ connection: EventLoopFuture<FramedClientConnection>,
        _ register: (FramedClientConnection) -> Call?
    ) async throws -> (FramedClientConnection, Call) {
        let handler: FramedClientConnection
        do {
            handler = try await connection.get()
        } catch {
            forget(connection)
            throw RPCError(code: .unavailable, message: "cannot connect to \(path): \(error)")
        }
        return (handler, try registering(register, on: handler, of: connection))
    }

    /// ``registered(on:_:)`` without a wait, when the connection is already made (the usual
    /// case); nil while it is being made.
    func registeredAtOnce<Call>(
        on connection: EventLoopFuture<FramedClientConnection>,
        _ register: (FramedClientConnection) -> Call?
    ) throws -> (FramedClientConnection, Call)? {
        guard let handler = state.withLock({ $0.connection === connection ? $0.connected : nil }) else { return nil }
        return (handler, try registering(register, on: handler, of: connection))
    }

    /// `register` run on `handler`; a connection that had closed is forgotten, the call refused.
    private func registering<Call>(
        _ register: (FramedClientConnection) -> Call?, on handler: FramedClientConnection,
        of connection: EventLoopFuture<FramedClientConnection>
    ) throws -> Call {
        guard let call = register(handler) else {
            forget(connection)
            throw RPCError(code: .unavailable, message: "the connection to \(path) had closed; the call was not sent")
        }
        return call
    }

    /// Drops a connection that failed or closed, so that the next call opens a new one.
    func forget(_ connection: EventLoopFuture<FramedClientConnection>) {
        state.withLock { state in
            if state.connection === connection {
                state.connection = nil
                state.connected = nil
            }
        }
    }

    func callEnded() {
        let finished = state.withLock { state in
            state.openCalls -= 1
            return state.isShutdown && state.openCalls == 0
        }
        if finished { finishShutdown() }
    }

    /// A new connection to `path`, on `eventLoop`. Its socket is connected here and handed to
    /// SwiftNIO, so that its calls can write into it directly
    /// (``FramedClientConnection/sendCall(stream:descriptor:request:)``).
    static func open(_ path: String, on eventLoop: any EventLoop) -> EventLoopFuture<FramedClientConnection> {
        let socket: CInt
        do {
            socket = try connectedSocket(path)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return connection(on: socket, eventLoop: eventLoop)
    }

    /// A connection over `socket`, already connected, which SwiftNIO takes (and closes).
    static func connection(on socket: CInt, eventLoop: any EventLoop) -> EventLoopFuture<FramedClientConnection> {
        ClientBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ClientFrameReader(connection: FramedClientConnection(channel: channel, socket: socket)))
                }
            }
            .withConnectedSocket(socket)
            .flatMapThrowing { channel in
                try channel.pipeline.syncOperations.handler(type: ClientFrameReader.self).connection
            }
    }
}

/// Writes a call's request parts as frames. For unary and server-streaming calls everything —
/// the open frame, the request, the end — goes out in one write when the request is finished.
final class ClientFrameWriter: ClosableRPCWriterProtocol, Sendable {
    typealias Element = RPCRequestPart<[UInt8]>

    private let channel: any Channel
    private let stream: UInt32
    private let path: String
    private let holdsUntilFinished: Bool
    private let held = Mutex<(bytes: ByteBuffer?, finished: Bool)>((nil, false))
    /// Bytes handed to the channel and not yet written to its socket. The channel's writability
    /// changes only when its event loop runs, so a writer on another thread that looked at it
    /// alone could queue a whole upload before the loop noticed the socket was full.
    private let unwritten = Atomic<Int>(0)
    /// Past this many unwritten bytes a write waits until it is on the socket.
    static let unwrittenLimit = 1024 * 1024

    init(channel: any Channel, stream: UInt32, path: String, holdsUntilFinished: Bool) {
        self.channel = channel
        self.stream = stream
        self.path = path
        self.holdsUntilFinished = holdsUntilFinished
    }

    func write(_ part: RPCRequestPart<[UInt8]>) async throws {
        let allocator = channel.allocator
        var frame: ByteBuffer
        switch part {
        case .metadata(let metadata):
            frame = allocator.frame(stream: stream, kind: .open, capacity: path.utf8.count + 64) { buffer in
                buffer.writeShortString(path)
                buffer.writeMetadata(metadata)
            }
        case .message(let bytes):
            frame = allocator.frame(stream: stream, kind: .message, capacity: bytes.count) { $0.writeBytes(bytes) }
        }
        let ready = held.withLock { held -> ByteBuffer? in
            if var pending = held.bytes {
                pending.writeBuffer(&frame)
                frame = pending
            }
            held.bytes = holdsUntilFinished ? frame : nil
            return holdsUntilFinished ? nil : frame
        }
        if let ready { try await send(ready) }
    }

    func write(contentsOf elements: some Sequence<RPCRequestPart<[UInt8]>>) async throws {
        for element in elements { try await write(element) }
    }

    func finish() async {
        var end = channel.allocator.frame(stream: stream, kind: .end)
        let frame = held.withLock { held -> ByteBuffer in
            held.finished = true
            defer { held.bytes = nil }
            guard var pending = held.bytes else { return end }
            pending.writeBuffer(&end)
            return pending
        }
        try? await send(frame)
    }

    func finish(throwing error: any Error) async {
        cancel()
    }

    /// Tells the server the caller gave up.
    func cancel() {
        let sent = held.withLock { held in
            defer { held.bytes = nil; held.finished = true }
            return held.bytes == nil
        }
        if sent { channel.writeAndFlush(channel.allocator.frame(stream: stream, kind: .cancel), promise: nil) }
    }

    /// Writes `bytes`, waiting for them to reach the socket when the channel cannot take more or
    /// more than ``unwrittenLimit`` bytes are already on their way. A unary call's one write
    /// waits only for an unwritable channel.
    private func send(_ bytes: ByteBuffer) async throws {
        if holdsUntilFinished {
            guard channel.isWritable else { return try await channel.writeAndFlush(bytes).get() }
            return channel.writeAndFlush(bytes, promise: nil)
        }
        let size = bytes.readableBytes
        let queued = unwritten.add(size, ordering: .relaxed).newValue
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { [self] _ in unwritten.subtract(size, ordering: .relaxed) }
        channel.writeAndFlush(bytes, promise: written)
        if queued > Self.unwrittenLimit || !channel.isWritable { try await written.futureResult.get() }
    }
}
