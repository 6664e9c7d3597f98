import FramedTransport
import GRPCCore
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 stream's gRPC call, the last handler of the stream's channel (after
/// ``HTTP2RequestGuard``), on its connection's event loop. A call to one of modeld's direct
/// methods (``DirectMethods``) without a deadline is read, run and answered here, as the framed
/// socket does it: at once in the turn that read it when the method can answer so, or by a task
/// started on this loop. Any other call (a deadline, a watch, health, reflection) is handed to
/// GRPCCore's server as a stream of request parts, and its response parts come back as frames
/// (``HTTP2CallWriter``).
final class HTTP2CallHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// Where the call is. Frames that come in a state that has no use for them are dropped.
    private enum State {
        /// No headers yet.
        case waitingForHeaders
        /// A direct call whose request is still arriving, and its headers.
        case collecting(PendingDirectCall, HTTP2Request)
        /// A direct call being run by a task.
        case running(ServerStreamRecord)
        /// Handed to GRPCCore: its messages go to the record's stream.
        case handedOver(ServerStreamRecord)
        /// Answered, refused or gone.
        case ended
    }

    private let connection: HTTP2Connection
    private var state = State.waitingForHeaders
    private var messages = GRPCMessageReader()
    private var clientEnded = false
    /// The bytes of a collected call's message held from the daemon's budget of requests still
    /// arriving until the call runs or ends, as the framed socket holds them
    /// (``PendingDirectCalls``): a client that sends whole messages and never ends their streams
    /// holds no more than the budget lets it.
    private var held = 0
    /// Ends a direct call whose request has not ended within the request timeout, or a call
    /// handed to GRPCCore none of whose request has arrived for the request timeout; armed when
    /// the request has not ended at the end of a read.
    private var requestTimer: Scheduled<Void>?
    /// When the last frame of a handed-over call's request came (its headers, then each message;
    /// set when the call is handed over, so no stream reads the clock for it otherwise).
    private var lastRequestFrame = NIODeadline.uptimeNanoseconds(0)
    /// Whether the frame being read ends the request (set while it is read).
    private var endingNow = false
    private var context: ChannelHandlerContext?

    init(connection: HTTP2Connection) {
        self.connection = connection
    }

    private var transport: HTTP2CallTransport { connection.transport }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        releaseHeld()
        requestTimer?.cancel()
        requestTimer = nil
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if requestTimer == nil, !clientEnded {
            switch state {
            case .collecting:
                // A request must arrive whole, its end included, within the request timeout: a
                // call opened and never ended would hold its message and its stream for good.
                let timeout = transport.limits.requestTimeout
                requestTimer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(timeout)) { [self] in
                    requestTimer = nil
                    guard case .collecting = state, !clientEnded else { return }
                    failRequest(ServerCalls.requestNotEnded(within: timeout), context: context)
                }
            case .handedOver:
                watchHandedOverRequest(context: context)
            case .waitingForHeaders, .running, .ended:
                break
            }
        }
        context.fireChannelReadComplete()
    }

    /// Ends a call handed to GRPCCore (health, history, watches, a restore) once its request has
    /// gone the request timeout with no frame, not ended: before, a stream that sent only its
    /// headers was held, with its place among the connection's streams and the connection's
    /// place among the daemon's, for as long as its client liked. A restore's stream of messages
    /// may take longer than the timeout as a whole, as long as it keeps coming.
    private func watchHandedOverRequest(context: ChannelHandlerContext) {
        let timeout = TimeAmount(transport.limits.requestTimeout)
        requestTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: lastRequestFrame + timeout) { [self] in
            requestTimer = nil
            guard case .handedOver = state, !clientEnded else { return }
            guard NIODeadline.now() - lastRequestFrame >= timeout else {
                return watchHandedOverRequest(context: context)
            }
            failRequest(ServerCalls.requestWentQuiet(for: transport.limits.requestTimeout), context: context)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        endingNow = payload.endsStream
        defer { endingNow = false }
        switch payload {
        case .headers(let headers):
            if case .waitingForHeaders = state {
                opened(headers.headers, context: context)
            }
            if headers.endStream { requestEnded(context: context) }
        case .data(let frame):
            if case .handedOver = state { lastRequestFrame = .now() }
            if case .byteBuffer(let bytes) = frame.data {
                received(bytes, context: context)
            }
            if frame.endStream { requestEnded(context: context) }
        default:
            break
        }
    }

    /// The call's headers: refused, or collected as a direct call, or handed to GRPCCore.
    private func opened(_ headers: HPACKHeaders, context: ChannelHandlerContext) {
        let request: HTTP2Request
        switch HTTP2Request.parse(headers) {
        case .success(let parsed): request = parsed
        case .failure(let refusal):
            state = .ended
            return refuse(refusal.headers, context: context)
        }
        guard !transport.calls.isShutdown else {
            state = .ended
            return refuse(.trailers(status: ServerCalls.stopping), context: context)
        }
        // A call with a deadline goes through GRPCCore, which enforces it.
        // A streaming method that cannot answer at once goes through GRPCCore too.
        if let (descriptor, handler) = transport.directMethods.handler(for: request.method), !request.hasDeadline,
            handler.immediate != nil || !handler.isStreaming
        {
            state = .collecting(PendingDirectCall(descriptor: descriptor, handler: handler), request)
            return
        }
        handOver(request.descriptor, metadata: request.metadata, context: context)
    }

    /// Hands the call to GRPCCore, with `parts` of its request already read.
    private func handOver(
        _ descriptor: MethodDescriptor, metadata: Metadata, parts: [RPCRequestPart<[UInt8]>] = [],
        context: ChannelHandlerContext
    ) {
        let (requests, continuation) = AsyncThrowingStream<RPCRequestPart<[UInt8]>, any Error>.makeStream()
        continuation.yield(.metadata(metadata))
        let record = ServerStreamRecord(requests: continuation)
        for part in parts {
            if case .message(let bytes) = part { deliver(bytes, to: record) } else { continuation.yield(part) }
        }
        let writer = HTTP2CallWriter(channel: context.channel)
        let inbound = FlowControlledRequests(base: requests, unread: record.unread, flow: connection.flow)
        let stream = RPCStream(
            descriptor: descriptor, inbound: RPCAsyncSequence(wrapping: inbound),
            outbound: RPCWriter.Closable(wrapping: writer))
        guard transport.calls.accept(stream, record: record, peer: connection.peer) else {
            continuation.finish()
            connection.flow.released(record.unread.takeAll())
            state = .ended
            return refuse(.trailers(status: ServerCalls.stopping), context: context)
        }
        state = .handedOver(record)
        lastRequestFrame = .now()
        if clientEnded { continuation.finish() }
    }

    private func received(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        messages.append(bytes)
        do {
            while let message = try messages.next(maximumSize: transport.limits.maximumMessageSize) {
                switch state {
                case .collecting(var call, let request):
                    let budget = transport.limits.requestBudget
                    guard budget.reserve(message.count) else {
                        let refusal = RPCError(code: .resourceExhausted, message: budget.refusal(for: message.count))
                        return failRequest(refusal, context: context)
                    }
                    releaseHeld()
                    held = message.count
                    call.received(message)
                    state = .collecting(call, request)
                case .handedOver(let record): deliver(message, to: record)
                case .waitingForHeaders, .running, .ended: break
                }
            }
        } catch {
            failRequest(error, context: context)
        }
    }

    /// Gives back what a collected call's message held of the request budget.
    private func releaseHeld() {
        guard held > 0 else { return }
        transport.limits.requestBudget.release(held)
        held = 0
    }

    /// A message for a call handed to GRPCCore, counted until its handler takes it.
    private func deliver(_ message: [UInt8], to record: ServerStreamRecord) {
        record.unread.add(message.count)
        connection.flow.received(message.count)
        record.requests?.yield(.message(message))
    }

    /// A request that cannot be read: its call ends with `error`'s status.
    private func failRequest(_ error: RPCError, context: ChannelHandlerContext) {
        releaseHeld()
        switch state {
        case .handedOver(let record):
            record.fail(error)
            record.cancel()
            connection.flow.released(record.unread.takeAll())
        case .running(let record):
            record.cancel()
        case .waitingForHeaders, .collecting, .ended:
            break
        }
        state = .ended
        let status = Status(code: Status.Code(error.code), message: error.message)
        refuse(.trailers(status: status, metadata: ErrorMetadata.metadata(of: status)), context: context)
    }

    private func requestEnded(context: ChannelHandlerContext) {
        guard !clientEnded else { return }
        clientEnded = true
        releaseHeld()
        requestTimer?.cancel()
        requestTimer = nil
        switch state {
        case .collecting(let call, let request):
            run(call, request: request, context: context)
        case .handedOver(let record):
            record.requests?.finish()
        case .waitingForHeaders, .running, .ended:
            break
        }
    }

    /// Runs a direct call whose request has all arrived: at once if its method answers so, by a
    /// task for a unary method, and through GRPCCore for a streaming one.
    private func run(_ call: PendingDirectCall, request headers: HTTP2Request, context: ChannelHandlerContext) {
        if let answer = transport.calls.answerAtOnce(call, caller: connection.peer) {
            state = .ended
            return write(answer, context: context)
        }
        switch call.handler {
        case .unary(let handler), .immediate(_, otherwise: let handler), .deferred(_, otherwise: let handler):
            guard call.messages == 1, let request = call.message else {
                state = .ended
                return write(.failure(ServerCalls.oneMessageNeeded(call.messages)), context: context)
            }
            let record = ServerStreamRecord(requests: nil)
            guard transport.calls.admitDirectCall(record) else {
                state = .ended
                return refuse(.trailers(status: ServerCalls.stopping), context: context)
            }
            state = .running(record)
            let onLoop = request.count <= FramedServerTransport.largestRequestOnEventLoop
            let answer = NIOLoopBound(self, eventLoop: context.eventLoop)
            transport.calls.runDirect(
                call.descriptor, record: record, caller: connection.peer, peer: transport.peer,
                executor: onLoop ? connection.loopExecutor : nil
            ) { context -> Result<[UInt8], any Error> in
                do {
                    return .success(try await handler(request, context))
                } catch {
                    return .failure(error)
                }
            } then: { (result: Result<[UInt8], any Error>) in
                if answer.eventLoop.inEventLoop {
                    answer.value.answered(result)
                } else {
                    answer.eventLoop.execute { answer.value.answered(result) }
                }
            }
        case .serverStreaming, .immediateStreaming:
            // Its usual handler reads the request as it would have: one message, or the error.
            let parts: [RPCRequestPart<[UInt8]>] = call.messages == 1 ? call.message.map { [.message($0)] } ?? [] : []
            handOver(call.descriptor, metadata: headers.metadata, parts: parts, context: context)
        }
    }

    /// A direct call's task has its answer (on the event loop).
    func answered(_ answer: Result<[UInt8], any Error>) {
        guard case .running = state, let context else { return }
        state = .ended
        write(answer, context: context)
    }

    private func write(_ answer: Result<[UInt8], any Error>, context: ChannelHandlerContext) {
        switch answer {
        case .success(let response):
            context.write(wrapOutboundOut(.headers(.init(headers: .grpcResponse))), promise: nil)
            let message = GRPCMessageReader.framed(response, allocator: context.channel.allocator)
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(message)))), promise: nil)
            context.writeAndFlush(
                wrapOutboundOut(.headers(.init(headers: .grpcOK, endStream: true))), promise: nil)
        case .failure(let error):
            let (status, metadata) = FramedServerTransport.status(of: error)
            context.writeAndFlush(
                wrapOutboundOut(
                    .headers(.init(headers: .trailers(status: status, metadata: metadata), endStream: true))),
                promise: nil)
        }
    }

    /// Ends the call with `headers` (trailers only, or an HTTP error) before its request has
    /// ended: once they are out, the client is asked to stop sending (RST_STREAM NO_ERROR, as
    /// ``HTTP2RequestGuard`` does) and the stream is closed.
    private func refuse(_ headers: HPACKHeaders, context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: written)
        guard !clientEnded, !endingNow else { return }
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.writeAndFlush(self.wrapOutboundOut(.rstStream(.noError)), promise: nil)
            context.close(promise: nil)
        }
    }

    /// A response part GRPCCore's handler wrote (``HTTP2CallWriter``): the trailers end the call.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .headers(let headers) = unwrapOutboundIn(data), headers.endStream,
            case .handedOver(let record) = state
        else {
            return context.write(data, promise: promise)
        }
        state = .ended
        record.requests?.finish()
        connection.flow.released(record.unread.takeAll())
        guard !clientEnded else { return context.write(data, promise: promise) }
        // The answer is whole while the client still sends: as for a refusal.
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.cascade(to: promise)
        context.write(data, promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.writeAndFlush(self.wrapOutboundOut(.rstStream(.noError)), promise: nil)
            context.close(promise: nil)
        }
    }

    /// The stream closed: reset by the client, or its connection gone. A call under way is
    /// cancelled.
    func channelInactive(context: ChannelHandlerContext) {
        releaseHeld()
        switch state {
        case .handedOver(let record):
            connection.flow.released(record.unread.takeAll())
            record.cancel()
            record.fail(RPCError(code: .cancelled, message: "the client cancelled the call"))
        case .running(let record):
            record.cancel()
        case .waitingForHeaders, .collecting, .ended:
            break
        }
        state = .ended
        context.fireChannelInactive()
    }
}

extension HPACKHeaders {
    /// A gRPC response's headers.
    static let grpcResponse: HPACKHeaders = [":status": "200", "content-type": "application/grpc"]
    /// The trailers of a call that succeeded.
    static let grpcOK: HPACKHeaders = ["grpc-status": "0"]
}

extension HTTP2Frame.FramePayload {
    /// Whether the frame ends its sender's side of the stream.
    fileprivate var endsStream: Bool {
        switch self {
        case .headers(let headers): headers.endStream
        case .data(let data): data.endStream
        default: false
        }
    }
}
