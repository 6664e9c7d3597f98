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
        let task = Task(executorPreference: executor ?? globalConcurrentExecutor) {
            // The handle is the context's only, not bound to the task as GRPCCore's own calls'
            // are: the parts of the call that ask to be cancelled with it
            // (``ServerStreamRecord/cancellingTask(_:)``) have this task cancelled by the record.
            let handle = ServerContext.RPCCancellationHandle()
            record.attach(handle)
            let context = ServerContext(descriptor: descriptor, remotePeer: peer, localPeer: peer, cancellation: handle)
            let answer = await ServerStreamRecord.$current.withValue(record) {
                await PeerCredentials.$current.withValue(caller ?? .unknown) { await body(context) }
            }
            deliver(answer)
            self.directCallEnded(record)
        }
        record.attach(task)
    }

    /// The answer to a call that arrives while the daemon stops.
    package static let stopping = Status(code: .unavailable, message: "modeld is stopping and takes no new calls")

    /// The error of a call whose request did not end within the request timeout of its first
    /// bytes (`timeout`, modeld's --request-timeout): a direct call's, on either socket.
    package static func requestNotEnded(within timeout: Duration) -> RPCError {
        RPCError(
            code: .deadlineExceeded,
            message:
                "the request did not end within \(timeout.components.seconds) s of its first bytes (modeld --request-timeout): a call's request ends once its message is sent; the call is ended"
        )
    }

    /// The error of a call handed to GRPCCore none of whose request arrived for the request
    /// timeout before its end, on either socket.
    package static func requestWentQuiet(for timeout: Duration) -> RPCError {
        RPCError(
            code: .deadlineExceeded,
            message:
                "no part of the request arrived for \(timeout.components.seconds) s, and it has not ended (modeld --request-timeout): a call's request ends once its last message is sent; the call is ended"
        )
    }

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
    private let cancellation = Mutex<Cancellation>(Cancellation())

    /// The direct call whose task this is (``ServerCalls/runDirect(_:record:caller:peer:executor:_:then:)``).
    @TaskLocal package static var current: ServerStreamRecord?

    /// What a cancel reaches: the context's handle and, for a direct call, the task running it
    /// while that task runs work that asked to be cancelled with the call.
    private struct Cancellation {
        var handle: ServerContext.RPCCancellationHandle?
        var task: Task<Void, Never>?
        /// What a deferred call's handler does when the call is cancelled (``DeferredAnswer``).
        var action: (@Sendable () -> Void)?
        var cancelled = false
        var cancelsTask = false
    }

    package init(requests: AsyncThrowingStream<RPCRequestPart<[UInt8]>, any Error>.Continuation?) {
        self.requests = requests
    }

    package func attach(_ handle: ServerContext.RPCCancellationHandle) {
        let cancelled = cancellation.withLock { state in
            state.handle = handle
            return state.cancelled
        }
        if cancelled { handle.cancel() }
    }

    /// Binds the task running a direct call (which may already be running).
    package func attach(_ task: Task<Void, Never>) {
        let cancel = cancellation.withLock { state in
            state.task = task
            return state.cancelled && state.cancelsTask
        }
        if cancel { task.cancel() }
    }

    /// Runs `body`, in the direct call's task, so that the task is cancelled if the call is
    /// meanwhile (or already was): what `withRPCCancellationHandler` does for GRPCCore's calls,
    /// without a handler registered and removed for each call.
    package func cancellingTask<T>(_ body: () async throws -> T) async throws -> T {
        let cancelled = cancellation.withLock { state in
            state.cancelsTask = true
            return state.cancelled
        }
        if cancelled { withUnsafeCurrentTask { $0?.cancel() } }
        defer { cancellation.withLock { $0.cancelsTask = false } }
        return try await body()
    }

    /// Runs `action` once when the call is cancelled, at once if it already was.
    package func onCancel(_ action: @escaping @Sendable () -> Void) {
        let cancelled = cancellation.withLock { state in
            if !state.cancelled { state.action = action }
            return state.cancelled
        }
        if cancelled { action() }
    }

    package func cancel() {
        let (handle, task, action) = cancellation.withLock { state in
            state.cancelled = true
            defer { state.action = nil }
            return (state.handle, state.cancelsTask ? state.task : nil, state.action)
        }
        handle?.cancel()
        task?.cancel()
        action?()
    }

    package func fail(_ error: RPCError) {
        requests?.finish(throwing: error)
    }
}
