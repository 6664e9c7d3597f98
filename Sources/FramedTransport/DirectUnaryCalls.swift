import GRPCCore
import NIOCore

/// Unary methods the framed transport runs itself, without GRPCCore's server machinery: a call
/// to one of them is read, handled and answered by its connection's event loop, where GRPCCore
/// would wake a listening task, a child task and the event loop again (the dearest part of a
/// round trip on these machines). Calls with a deadline, and methods not in the table, go
/// through GRPCCore as before; both answer with the same frames.
public struct DirectUnaryMethods: Sendable {
    /// Turns a request's bytes into the response's bytes, or throws an `RPCError` (any other
    /// error becomes `unknown`, as GRPCCore's server makes it).
    public typealias Handler = @Sendable (_ request: [UInt8], _ context: ServerContext) async throws -> [UInt8]

    private var handlers: [String: (descriptor: MethodDescriptor, handler: Handler)] = [:]

    public init() {}

    /// Runs calls to `method` with `handler`.
    public mutating func register(_ method: MethodDescriptor, _ handler: @escaping Handler) {
        handlers[method.fullyQualifiedMethod] = (method, handler)
    }

    /// The method and handler for a call's path (`service/method`).
    func handler(for path: String) -> (descriptor: MethodDescriptor, handler: Handler)? {
        handlers[path]
    }
}

/// A direct call whose request is still arriving: its one message, once the client ends it.
struct PendingDirectCall {
    let descriptor: MethodDescriptor
    let handler: DirectUnaryMethods.Handler
    let record: ServerStreamRecord
    var message: [UInt8]?
    var messages = 0

    mutating func received(_ bytes: [UInt8]) {
        messages += 1
        message = bytes
    }
}

/// Runs tasks on an event loop's thread: a direct call's handler starts where its request was
/// read and answers without another thread, unless it awaits work elsewhere.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

extension FramedServerTransport {
    /// Requests up to this size are handled on the event loop; a larger one (a bulk save, say)
    /// would keep the loop from its other connections while it is decoded, so it runs on
    /// Swift's shared threads.
    static let largestRequestOnEventLoop = 16 * 1024

    /// Runs a direct call whose request is complete and writes its answer on `channel`.
    func run(_ call: PendingDirectCall, stream: UInt32, channel: any Channel, loopExecutor: EventLoopTaskExecutor) {
        guard admitDirectCall(call.record) else {
            channel.writeAndFlush(ServerConnectionHandler.stoppingFrame(stream: stream, allocator: channel.allocator), promise: nil)
            return
        }
        let onLoop = (call.message?.count ?? 0) <= Self.largestRequestOnEventLoop
        let peer = "unix:" + path
        Task(executorPreference: onLoop ? loopExecutor : globalConcurrentExecutor) {
            await withServerContextRPCCancellationHandle { handle in
                call.record.attach(handle)
                let context = ServerContext(descriptor: call.descriptor, remotePeer: peer, localPeer: peer, cancellation: handle)
                let answer = await Self.answer(call, context: context, stream: stream, allocator: channel.allocator)
                channel.writeAndFlush(answer, promise: nil)
            }
            self.directCallEnded(call.record)
        }
    }

    /// The frames that answer a call: its (empty) metadata, the message and an OK status, or
    /// only the status of the error.
    private static func answer(_ call: PendingDirectCall, context: ServerContext, stream: UInt32,
                               allocator: ByteBufferAllocator) async -> ServerOutbound {
        let status: Status
        var trailers: Metadata = [:]
        do {
            guard call.messages == 1, let request = call.message else {
                throw RPCError(code: .internalError, message: "a unary call needs exactly one request message; \(call.messages) arrived")
            }
            let response = try await call.handler(request, context)
            var frames = allocator.frame(stream: stream, kind: .metadata) { $0.writeMetadata([:]) }
            var message = ServerFrameWriter.messageFrame(response, stream: stream, allocator: allocator)
            frames.writeBuffer(&message)
            var end = ServerConnectionHandler.statusFrame(stream: stream, status: Status(code: .ok, message: ""), allocator: allocator)
            frames.writeBuffer(&end.bytes)
            return ServerOutbound(bytes: frames, ends: stream)
        } catch let error as RPCError {
            status = Status(code: Status.Code(error.code), message: error.message)
            trailers = error.metadata
        } catch {
            status = Status(code: .unknown, message: "Service method threw an unknown error.")
        }
        return ServerConnectionHandler.statusFrame(stream: stream, status: status, metadata: trailers, allocator: allocator)
    }
}
