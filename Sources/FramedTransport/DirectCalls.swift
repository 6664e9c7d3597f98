import GRPCCore
import NIOCore
import Synchronization

/// Methods the framed transport runs itself, without GRPCCore's server machinery: a call to one
/// of them is read, handled and answered by its connection's event loop, where GRPCCore would
/// wake a listening task, a child task and the event loop again (the dearest part of a round
/// trip on these machines). Unary and server-streaming methods can be direct. Calls with a
/// deadline, and methods not in the table, go through GRPCCore as before; both answer with the
/// same frames.
public struct DirectMethods: Sendable {
    /// Turns a request's bytes into the response's bytes, or throws an `RPCError` (any other
    /// error becomes `unknown`, as GRPCCore's server makes it).
    public typealias UnaryHandler = @Sendable (_ request: [UInt8], _ context: ServerContext) async throws -> [UInt8]
    /// Writes a request's responses to `responses`, then returns (an OK status) or throws (the
    /// status of the error, as for a unary handler).
    public typealias ServerStreamingHandler =
        @Sendable (
            _ request: [UInt8], _ context: ServerContext,
            _ responses: DirectResponseWriter
        ) async throws -> Void

    /// Answers a request at once, on the event loop that read it, with the caller's
    /// credentials (what ``PeerCredentials/current`` holds for the other handlers): the one
    /// response message, which is the call's whole answer (for a server-streaming method, a
    /// stream of one). Or returns nil, having changed nothing, when the work would have to wait
    /// or run long: the call then runs as usual. It must not block. Throws as a unary handler
    /// does.
    public typealias ImmediateHandler = @Sendable (_ request: [UInt8], _ caller: PeerCredentials?) throws -> [UInt8]?

    /// Takes a call on the event loop that read it, with the caller's credentials, to answer it
    /// later, from any thread, through `answer` (``DeferredAnswer``): for work that waits
    /// elsewhere (a save queued for a store's writer) with no task to suspend. Or returns false,
    /// having changed nothing, and the call runs as usual. It must not block. What it throws
    /// answers the call, as a unary handler's error does.
    public typealias DeferredHandler =
        @Sendable (_ request: [UInt8], _ caller: PeerCredentials?, _ answer: DeferredAnswer) throws -> Bool

    package enum Handler: Sendable {
        case unary(UnaryHandler)
        /// Tried first; the unary handler runs when it returns nil.
        case immediate(ImmediateHandler, otherwise: UnaryHandler)
        /// Tried first (on the framed transport); the unary handler runs when it returns false.
        case deferred(DeferredHandler, otherwise: UnaryHandler)
        case serverStreaming(ServerStreamingHandler)
        /// Tried first; the server-streaming handler runs when it returns nil.
        case immediateStreaming(ImmediateHandler, otherwise: ServerStreamingHandler)

        /// The handler to try first, if any.
        package var immediate: ImmediateHandler? {
            switch self {
            case .immediate(let handler, _), .immediateStreaming(let handler, _): handler
            case .unary, .deferred, .serverStreaming: nil
            }
        }

        /// Whether the method is server-streaming.
        package var isStreaming: Bool {
            switch self {
            case .serverStreaming, .immediateStreaming: true
            case .unary, .immediate, .deferred: false
            }
        }
    }

    private var handlers: [String: (descriptor: MethodDescriptor, handler: Handler)] = [:]

    public init() {}

    /// Runs calls to the unary `method` with `handler`.
    public mutating func register(_ method: MethodDescriptor, _ handler: @escaping UnaryHandler) {
        handlers[method.fullyQualifiedMethod] = (method, .unary(handler))
    }

    /// Answers calls to the unary `method` with `immediately` where their requests are read,
    /// and with `handler` (as ``register(_:_:)`` does) when it returns nil, or when there is none.
    public mutating func register(
        _ method: MethodDescriptor, immediately: ImmediateHandler?, otherwise handler: @escaping UnaryHandler
    ) {
        handlers[method.fullyQualifiedMethod] = (
            method, immediately.map { .immediate($0, otherwise: handler) } ?? .unary(handler)
        )
    }

    /// Offers calls to the unary `method` to `deferred` where their requests are read, and runs
    /// them with `handler` (as ``register(_:_:)`` does) when it does not take them, or on a
    /// transport that answers only with tasks (HTTP/2).
    public mutating func register(
        _ method: MethodDescriptor, deferred: @escaping DeferredHandler, otherwise handler: @escaping UnaryHandler
    ) {
        handlers[method.fullyQualifiedMethod] = (method, .deferred(deferred, otherwise: handler))
    }

    /// Runs calls to the server-streaming `method` with `handler`.
    public mutating func registerServerStreaming(
        _ method: MethodDescriptor, _ handler: @escaping ServerStreamingHandler
    ) {
        handlers[method.fullyQualifiedMethod] = (method, .serverStreaming(handler))
    }

    /// Answers calls to the server-streaming `method` with `immediately` where their requests
    /// are read, and with `handler` (as ``registerServerStreaming(_:_:)`` does) when it returns
    /// nil, or when there is none.
    public mutating func registerServerStreaming(
        _ method: MethodDescriptor, immediately: ImmediateHandler?, otherwise handler: @escaping ServerStreamingHandler
    ) {
        handlers[method.fullyQualifiedMethod] = (
            method, immediately.map { .immediateStreaming($0, otherwise: handler) } ?? .serverStreaming(handler)
        )
    }

    /// The method and handler for a call's path (`service/method`).
    package func handler(for path: String) -> (descriptor: MethodDescriptor, handler: Handler)? {
        handlers[path]
    }
}

/// A direct call whose request is still arriving: its one message, once the client ends it.
package struct PendingDirectCall {
    package let descriptor: MethodDescriptor
    package let handler: DirectMethods.Handler
    package var message: [UInt8]?
    package var messages = 0
    /// When the call was first found still pending at the end of a read (its request did not all
    /// come in the read that opened it): from then it has the request timeout to end.
    package var pendingSince: NIODeadline?

    package init(descriptor: MethodDescriptor, handler: DirectMethods.Handler) {
        self.descriptor = descriptor
        self.handler = handler
    }

    package mutating func received(_ bytes: [UInt8]) {
        messages += 1
        message = bytes
    }
}

/// Runs tasks on an event loop's thread: a direct call's handler starts where its request was
/// read and answers without another thread, unless it awaits work elsewhere.
package final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    package init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

extension FramedServerTransport {
    /// Requests up to this size are handled on the event loop; a larger one (a bulk save, say)
    /// would keep the loop from its other connections while it is decoded, so it runs on
    /// Swift's shared threads. (A handler that streams much back can move itself off the loop.)
    package static let largestRequestOnEventLoop = 16 * 1024

    /// A direct call's whole answer from its immediate handler (``ServerCalls/answerAtOnce(_:caller:)``):
    /// its (empty) metadata, the message and an OK status, or the status of the error; nil when
    /// there is none, and ``run(_:record:stream:channel:loopExecutor:outbound:peer:)`` runs it.
    func answerAtOnce(
        _ call: PendingDirectCall, stream: UInt32, allocator: ByteBufferAllocator, caller: PeerCredentials?
    ) -> ByteBuffer? {
        calls.answerAtOnce(call, caller: caller).map { Self.answer($0, stream: stream, allocator: allocator) }
    }

    /// Runs a direct call whose request is complete and writes its answer on `channel`.
    func run(
        _ call: PendingDirectCall, record: ServerStreamRecord, stream: UInt32, channel: any Channel,
        loopExecutor: EventLoopTaskExecutor, outbound: OutboundQueue, peer caller: PeerCredentials?
    ) {
        guard calls.admitDirectCall(record) else {
            channel.writeAndFlush(
                ServerConnectionHandler.stoppingFrame(stream: stream, allocator: channel.allocator), promise: nil)
            return
        }
        let onLoop = (call.message?.count ?? 0) <= Self.largestRequestOnEventLoop
        if onLoop, case .deferred(let deferred, _) = call.handler, call.messages == 1, let request = call.message,
            offer(request, to: deferred, record: record, stream: stream, channel: channel, caller: caller)
        {
            return
        }
        calls.runDirect(
            call.descriptor, record: record, caller: caller, peer: "unix:" + path, executor: onLoop ? loopExecutor : nil
        ) { context in
            await Self.answer(call, context: context, stream: stream, channel: channel, outbound: outbound)
        } then: { answer in
            channel.writeAndFlush(answer, promise: nil)
        }
    }

    /// Offers a call to its deferred handler (``DirectMethods/DeferredHandler``); true when the
    /// handler took it (or threw), and the call is answered through its ``DeferredAnswer``,
    /// which writes the answer on `channel` and counts the call out.
    private func offer(
        _ request: [UInt8], to deferred: DirectMethods.DeferredHandler, record: ServerStreamRecord, stream: UInt32,
        channel: any Channel, caller: PeerCredentials?
    ) -> Bool {
        let calls = calls
        let answer = DeferredAnswer(record: record, eventLoop: channel.eventLoop) { result in
            let frames = Self.answer(result, stream: stream, allocator: channel.allocator)
            channel.writeAndFlush(ServerOutbound(bytes: frames, ends: stream), promise: nil)
            calls.directCallEnded(record)
        }
        do {
            return try deferred(request, caller, answer)
        } catch {
            answer.answer { throw error }
            return true
        }
    }

    /// A unary call's whole answer: ``okAnswer(_:stream:allocator:)`` for a response, the status
    /// of an error.
    static func answer(_ result: Result<[UInt8], any Error>, stream: UInt32, allocator: ByteBufferAllocator)
        -> ByteBuffer
    {
        switch result {
        case .success(let response): okAnswer(response, stream: stream, allocator: allocator)
        case .failure(let error): statusFrame(of: error, stream: stream, allocator: allocator)
        }
    }

    /// The status frame that ends a call with `error`.
    static func statusFrame(of error: any Error, stream: UInt32, allocator: ByteBufferAllocator) -> ByteBuffer {
        let (status, trailers) = Self.status(of: error)
        return ServerConnectionHandler.statusFrame(
            stream: stream, status: status, metadata: trailers, allocator: allocator
        )
        .bytes
    }

    /// A unary call's whole answer: its (empty) response metadata, the message and an OK
    /// status, written into one buffer made once.
    static func okAnswer(_ response: [UInt8], stream: UInt32, allocator: ByteBufferAllocator) -> ByteBuffer {
        // The metadata frame's payload is a count of 0; the status's a code, an empty message
        // and a count of 0. Written byte by byte into memory reserved once: ByteBuffer's
        // writeInteger checks room and uniqueness per integer (about 2,000 instructions an
        // answer against about 300).
        let size = 3 * Frame.headerSize + 4 + response.count + 9
        var frames = allocator.buffer(capacity: size)
        frames.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            // ! the buffer holds at least `size` bytes, so it has an address.
            let out = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var at = 0
            @inline(__always) func put(_ value: UInt32) {
                (out + at).pointee = UInt8(truncatingIfNeeded: value >> 24)
                (out + at + 1).pointee = UInt8(truncatingIfNeeded: value >> 16)
                (out + at + 2).pointee = UInt8(truncatingIfNeeded: value >> 8)
                (out + at + 3).pointee = UInt8(truncatingIfNeeded: value)
                at += 4
            }
            @inline(__always) func put(_ byte: UInt8) {
                (out + at).pointee = byte
                at += 1
            }
            put(UInt32(4)); put(stream); put(Frame.Kind.metadata.rawValue); put(UInt32(0))
            put(UInt32(response.count)); put(stream); put(Frame.Kind.message.rawValue)
            response.withUnsafeBufferPointer { bytes in
                if let base = bytes.baseAddress { (out + at).update(from: base, count: bytes.count) }
            }
            at += response.count
            put(UInt32(9)); put(stream); put(Frame.Kind.status.rawValue); put(UInt8(Status.Code.ok.rawValue))
            put(UInt32(0)); put(UInt32(0))
            return at
        }
        return frames
    }

    /// `frames` followed by an OK status: the end of a call that succeeded.
    private static func endedOK(_ frames: ByteBuffer, stream: UInt32, allocator: ByteBufferAllocator)
        -> ServerOutbound
    {
        var frames = frames
        var end = ServerConnectionHandler.statusFrame(
            stream: stream, status: Status(code: .ok, message: ""), allocator: allocator)
        frames.writeBuffer(&end.bytes)
        return ServerOutbound(bytes: frames, ends: stream)
    }

    /// The status and trailing metadata a handler's error ends its call with, as GRPCCore's
    /// server makes them: an `RPCError`'s own, `unknown` for any other error.
    package static func status(of error: any Error) -> (Status, Metadata) {
        guard let error = error as? RPCError else {
            return (Status(code: .unknown, message: "Service method threw an unknown error."), [:])
        }
        return (Status(code: Status.Code(error.code), message: error.message), error.metadata)
    }

    /// The frames that end a call: for a unary call, its (empty) metadata, the message and an
    /// OK status; for a streaming one, whatever metadata has not gone out and the status; or
    /// only the status of the error.
    private static func answer(
        _ call: PendingDirectCall, context: ServerContext, stream: UInt32,
        channel: any Channel, outbound: OutboundQueue
    ) async -> ServerOutbound {
        let allocator = channel.allocator
        let responses = DirectResponseWriter(channel: channel, stream: stream, outbound: outbound)
        var leading: ByteBuffer?
        do {
            guard call.messages == 1, let request = call.message else {
                throw ServerCalls.oneMessageNeeded(call.messages)
            }
            let frames: ByteBuffer
            switch call.handler {
            case .unary(let handler), .immediate(_, otherwise: let handler), .deferred(_, otherwise: let handler):
                let response = try await handler(request, context)
                return ServerOutbound(bytes: okAnswer(response, stream: stream, allocator: allocator), ends: stream)
            case .serverStreaming(let handler), .immediateStreaming(_, otherwise: let handler):
                do {
                    try await handler(request, context, responses)
                } catch {
                    // Messages written before the error still reach the client, then its status.
                    leading = responses.takeUnsent()
                    throw error
                }
                // A stream of no messages still has its metadata before its OK status.
                frames = responses.takeLeadingFrames() ?? allocator.buffer(capacity: 0)
            }
            return endedOK(frames, stream: stream, allocator: allocator)
        } catch {
            var end = statusFrame(of: error, stream: stream, allocator: allocator)
            guard var leading else { return ServerOutbound(bytes: end, ends: stream) }
            leading.writeBuffer(&end)
            return ServerOutbound(bytes: leading, ends: stream)
        }
    }
}
