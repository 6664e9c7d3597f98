import GRPCCore
import Synchronization

/// The calls a server transport has taken in, for both of modeld's transports (framed and
/// HTTP/2): the streams it hands to GRPCCore's server (``serve(peer:streamHandler:)``), and the
/// calls it runs itself (``DirectMethods``), counted so that a graceful shutdown cancels them
/// and waits for them. Once shut down it takes no more.
package final class ServerCalls: Sendable {
    package typealias Stream = RPCStream<
        RPCAsyncSequence<RPCRequestPart<[UInt8]>, any Error>, RPCWriter<RPCResponsePart<[UInt8]>>.Closable
    >

    private let newStreams: AsyncStream<AcceptedStream>
    private let newStreamsContinuation: AsyncStream<AcceptedStream>.Continuation
    private let state = Mutex(State())

    private struct State {
        var isShutdown = false
        var streams: [ObjectIdentifier: ServerStreamRecord] = [:]
        var directCalls = 0
        var directCallsDone: [CheckedContinuation<Void, Never>] = []
    }

    package init() {
        (newStreams, newStreamsContinuation) = AsyncStream.makeStream()
    }

    package var isShutdown: Bool { state.withLock { $0.isShutdown } }

    /// Runs each stream handed over with ``accept(_:record:peer:)`` through `streamHandler`,
    /// with its caller's credentials as ``PeerCredentials/current``, until ``beginShutdown()``;
    /// then waits for those calls and the direct ones to end.
    package func serve(
        peer: String, streamHandler: @escaping @Sendable (Stream, ServerContext) async -> Void
    ) async {
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
    }

    /// Hands a new call to ``serve(peer:streamHandler:)``; false once shutting down.
    package func accept(_ stream: Stream, record: ServerStreamRecord, peer: PeerCredentials?) -> Bool {
        guard !isShutdown,
            case .enqueued = newStreamsContinuation.yield(AcceptedStream(stream: stream, record: record, peer: peer))
        else { return false }
        return true
    }

    /// Counts a direct call in, so that shutdown cancels it and waits for it; false (and not
    /// counted) once shutting down.
    package func admitDirectCall(_ record: ServerStreamRecord) -> Bool {
        state.withLock { state in
            guard !state.isShutdown else { return false }
            state.streams[ObjectIdentifier(record)] = record
            state.directCalls += 1
            return true
        }
    }

    /// Counts in a call answered at once on the calling thread (which cannot be cancelled), so
    /// that shutdown waits for it; false (and not counted) once shutting down.
    package func admitImmediateCall() -> Bool {
        state.withLock { state in
            guard !state.isShutdown else { return false }
            state.directCalls += 1
            return true
        }
    }

    package func immediateCallEnded() {
        directCallEnded(nil)
    }

    package func directCallEnded(_ record: ServerStreamRecord?) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let record { state.streams.removeValue(forKey: ObjectIdentifier(record)) }
            state.directCalls -= 1
            guard state.directCalls == 0 else { return [] }
            defer { state.directCallsDone = [] }
            return state.directCallsDone
        }
        for waiter in waiters { waiter.resume() }
    }

    /// A direct call's response from its immediate handler (``DirectMethods/ImmediateHandler``),
    /// made on the calling thread, or the error it threw. Nil when the method has none, the
    /// request is not one small message, the transport is stopping, or the handler left the call
    /// to its usual handler (which then runs: ``runDirect(_:record:caller:peer:executor:_:then:)``).
    package func answerAtOnce(_ call: PendingDirectCall, caller: PeerCredentials?) -> Result<[UInt8], any Error>? {
        guard let immediately = call.handler.immediate, call.messages == 1, let request = call.message,
            request.count <= FramedServerTransport.largestRequestOnEventLoop, admitImmediateCall()
        else { return nil }
        defer { immediateCallEnded() }
        do {
            return try immediately(request, caller).map { .success($0) }
        } catch {
            return .failure(error)
        }
    }

    /// Runs a direct call admitted with ``admitDirectCall(_:)`` by a task on `executor` (a
    /// connection's event loop; Swift's shared threads when nil), with a cancellation handle,
    /// a context and its caller's credentials, hands what `body` made to `deliver`, then counts
    /// the call out.
    package func runDirect<Answer: Sendable>(
        _ descriptor: MethodDescriptor, record: ServerStreamRecord, caller: PeerCredentials?, peer: String,
        executor: (any TaskExecutor)?, _ body: @escaping @Sendable (ServerContext) async -> Answer,
        then deliver: @escaping @Sendable (Answer) -> Void
    ) {
        Task(executorPreference: executor ?? globalConcurrentExecutor) {
            await withServerContextRPCCancellationHandle { handle in
                record.attach(handle)
                let context = ServerContext(
                    descriptor: descriptor, remotePeer: peer, localPeer: peer, cancellation: handle)
                deliver(await PeerCredentials.$current.withValue(caller ?? .unknown) { await body(context) })
            }
            self.directCallEnded(record)
        }
    }

    /// The answer to a call that arrives while the daemon stops.
    package static let stopping = Status(code: .unavailable, message: "modeld is stopping and takes no new calls")

    /// The error of a call of a unary or server-streaming method that sent `messages` messages.
    package static func oneMessageNeeded(_ messages: Int) -> RPCError {
        RPCError(
            code: .internalError,
            message: "a call of this method needs exactly one request message; \(messages) arrived")
    }

    /// The status a writer ends its stream with when GRPCCore's handler finishes with `error`.
    package static func status(closing error: any Error) -> Status {
        (error as? RPCError).map { Status(code: Status.Code($0.code), message: $0.message) }
            ?? Status(code: .unknown, message: "\(error)")
    }

    /// Takes no more calls, and tells those under way to cancel, as HTTP/2's graceful shutdown
    /// does.
    package func beginShutdown() {
        let streams = state.withLock { state in
            state.isShutdown = true
            return Array(state.streams.values)
        }
        newStreamsContinuation.finish()
        for stream in streams { stream.cancel() }
    }
}

struct AcceptedStream: Sendable {
    let stream: ServerCalls.Stream
    let record: ServerStreamRecord
    /// The caller: its connection's peer credentials.
    let peer: PeerCredentials?
}

/// One call on the server: its request parts' continuation (none for a direct call, which
/// collects its request itself) and its cancellation handle.
package final class ServerStreamRecord: Sendable {
    package let requests: AsyncThrowingStream<RPCRequestPart<[UInt8]>, any Error>.Continuation?
    /// Its messages' bytes not yet taken by its handler (see ``InboundFlow``).
    package let unread = UnreadBytes()
    private let handle = Mutex<(handle: ServerContext.RPCCancellationHandle?, cancelled: Bool)>((nil, false))

    package init(requests: AsyncThrowingStream<RPCRequestPart<[UInt8]>, any Error>.Continuation?) {
        self.requests = requests
    }

    package func attach(_ handle: ServerContext.RPCCancellationHandle) {
        let cancelled = self.handle.withLock { state in
            state.handle = handle
            return state.cancelled
        }
        if cancelled { handle.cancel() }
    }

    package func cancel() {
        let handle = self.handle.withLock { state in
            state.cancelled = true
            return state.handle
        }
        handle?.cancel()
    }

    package func fail(_ error: RPCError) {
        requests?.finish(throwing: error)
    }
}
