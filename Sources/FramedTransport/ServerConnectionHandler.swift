import Foundation
import GRPCCore
import Synchronization
import NIOCore

/// One client connection on the server, the only handler of its channel: reads frames
/// (``FrameReader``), turns them into calls handed to the transport, and the calls' response
/// parts into frames; a call its method answers at once (``DirectMethods/ImmediateHandler``) is
/// read, run and answered here, in the loop's turn that read it. Runs on the connection's event
/// loop. A client that does not read its answers stops being read (as NIO's
/// `BackPressureHandler` would have it). A connection with no call under way for the idle
/// timeout is closed.
final class ServerConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ServerOutbound
    typealias OutboundOut = ByteBuffer

    private let transport: FramedServerTransport
    private let reader: FrameReader
    private var streams: [UInt32: ServerStreamRecord] = [:]
    /// Direct calls (``DirectMethods``) whose request is still arriving.
    private var pendingDirect: PendingDirectCalls
    private var loopExecutor: EventLoopTaskExecutor?
    /// What the connection's writers have queued (see ``OutboundQueue``).
    private let outbound = OutboundQueue()
    /// Checks the connection's idleness every idle timeout (one timer for the connection's
    /// life, not one a call).
    private var idleTimer: Scheduled<Void>?
    /// Since when no call has been under way; nil while one is.
    private var idleSince: NIODeadline? = .now()
    /// Stops reading while calls have not taken the messages sent to them (set when added).
    private var flow: InboundFlow?
    /// Whether a read was asked for while the channel could not take more writes.
    private var pendingRead = false
    /// The method last opened on the connection: a client calls the same few again and again.
    private var lastMethod: OpenedMethod?
    /// When the answers written at once are flushed.
    private var answersFlush = TurnEndFlush()
    /// The connections of this connection's event loop, this one among them (set when added).
    private var loopConnections: LoopConnections?
    /// Whether the channel is between a read and the reads' end (``channelReadComplete(context:)``).
    private var inReads = false
    /// Ends the direct calls whose request has not ended within the request timeout: one timer
    /// for the connection, armed while calls stay pending across reads (``checkPending(context:)``).
    private var pendingTimer: Scheduled<Void>?
    /// The calls handed to GRPCCore whose request has not ended, and the timer that ends those
    /// that go quiet (``checkUnended(context:)``).
    private var unended = UnendedRequests()
    private var unendedTimer: Scheduled<Void>?

    /// Who connected (`SO_PEERCRED`), given to every call of the connection.
    private let peer: PeerCredentials?
    /// What the connection writes, sent straight into its socket where it can be.
    private let answers: SocketAnswers

    init(transport: FramedServerTransport, peer: PeerCredentials?, socket: CInt) {
        self.transport = transport
        self.peer = peer
        self.answers = SocketAnswers(socket: socket)
        self.reader = FrameReader(limits: transport.limits)
        self.pendingDirect = PendingDirectCalls(budget: transport.limits.requestBudget)
    }

    /// The calls one connection may have open at once, as an HTTP/2 connection's streams.
    static let maximumOpenCalls = 100

    func handlerAdded(context: ChannelHandlerContext) {
        loopExecutor = EventLoopTaskExecutor(eventLoop: context.eventLoop)
        let connections = transport.loopConnections.connections(on: context.eventLoop)
        connections.count += 1
        loopConnections = connections
        flow = InboundFlow(channel: context.channel, statistics: transport.inboundFlow)
        // Made once, not for every read; the reader lets go of it when the connection closes.
        reader.timedOut = { [self] in handle($0, context: context) }
        scheduleIdleCheck(in: TimeAmount(transport.limits.idleTimeout), context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        loopConnections?.count -= 1
        loopConnections = nil
        idleTimer?.cancel()
        idleTimer = nil
        pendingTimer?.cancel()
        pendingTimer = nil
        unendedTimer?.cancel()
        unendedTimer = nil
        reader.close()
    }

    /// Closes the connection if it has been idle for the idle timeout by then, or looks again
    /// once it could have been.
    private func scheduleIdleCheck(in delay: TimeAmount, context: ChannelHandlerContext) {
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            let timeout = TimeAmount(transport.limits.idleTimeout)
            guard let idleSince else { return scheduleIdleCheck(in: timeout, context: context) }
            let idle = NIODeadline.now() - idleSince
            guard idle >= timeout else { return scheduleIdleCheck(in: timeout - idle, context: context) }
            context.close(promise: nil)
        }
    }

    /// Marks the connection idle from now if no call is under way.
    private func noteIdle() {
        guard idleSince == nil, streams.isEmpty, pendingDirect.isEmpty else { return }
        idleSince = .now()
    }

    private func callStarted() {
        idleSince = nil
    }

    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.read()
        } else {
            pendingRead = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            if pendingRead {
                pendingRead = false
                context.read()
            }
        } else {
            answers.flush(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        inReads = true
        answersFlush.read(buffer)
        reader.append(buffer)
        do {
            while let inbound = try reader.next(context: context) {
                handle(inbound, context: context)
            }
        } catch {
            errorCaught(context: context, error: error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inReads = false
        if answersFlush.readsComplete() { answers.flush(context: context) }
        if !pendingDirect.isEmpty { checkPending(context: context) }
        if !unended.isEmpty, unendedTimer == nil { checkUnended(context: context) }
        context.fireChannelReadComplete()
    }

    /// Arms the timer that ends the calls handed to GRPCCore whose request has gone the request
    /// timeout with no frame and has not ended (``UnendedRequests``).
    private func checkUnended(context: ChannelHandlerContext) {
        let timeout = TimeAmount(transport.limits.requestTimeout)
        guard let deadline = unended.earliestDeadline(timeout: timeout) else { return }
        unendedTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            unendedTimer = nil
            let quiet = unended.takeQuiet(since: .now() - timeout).filter { streams[$0] != nil }
            end(quiet, with: ServerCalls.requestWentQuiet(for: transport.limits.requestTimeout), context: context)
            checkUnended(context: context)
        }
    }

    /// Ends the calls on `streams` with `error`'s status (a request timeout's).
    private func end(_ streams: [UInt32], with error: RPCError, context: ChannelHandlerContext) {
        let status = Status(code: Status.Code(error.code), message: error.message)
        for stream in streams { handle(.refused(stream: stream, status: status), context: context) }
    }

    /// Notes the calls whose request did not end in the read that opened it, and arms the timer
    /// that ends them once the request timeout has passed (a request must arrive whole, its end
    /// included, within it: a call opened and never ended would hold its message and its place
    /// among the connection's calls for good).
    private func checkPending(context: ChannelHandlerContext) {
        guard let earliest = pendingDirect.notePending(at: .now()), pendingTimer == nil else { return }
        let timeout = TimeAmount(transport.limits.requestTimeout)
        pendingTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: earliest + timeout) { [self] in
            pendingTimer = nil
            end(
                pendingDirect.pending(since: .now() - timeout),
                with: ServerCalls.requestNotEnded(within: transport.limits.requestTimeout), context: context)
            checkPending(context: context)
        }
    }

    /// Flushes the answer just written at the end of the event loop's turn (``TurnEndFlush``), or,
    /// for a connection alone on its loop answering what it read, at the reads' end.
    private func flushAtTurnEnd(_ context: ChannelHandlerContext) {
        // Set while the handler is in the pipeline; out of it, nothing waits for a turn's end.
        guard let connections = loopConnections else { return answers.flush(context: context) }
        guard answersFlush.schedule(atReadsEnd: inReads && connections.count == 1) else { return }
        connections.flushAtTurnEnd(context) { [self] in
            answersFlush.flushed()
            answers.flush(context: context)
        }
    }

    private func handle(_ inbound: ServerInbound, context: ChannelHandlerContext) {
        switch inbound {
        case .refused(let stream, let status):
            if let record = streams.removeValue(forKey: stream) {
                record.fail(RPCError(code: RPCError.Code(status.code) ?? .unknown, message: status.message))
                flow?.released(record.unread.takeAll())
            }
            pendingDirect.remove(stream)
            unended.remove(stream)
            let frame = Self.statusFrame(
                stream: stream, status: status, metadata: transport.refusalMetadata(status),
                allocator: context.channel.allocator)
            writeAndFlush(frame.bytes, context: context)
            noteIdle()
        case .frame(var frame):
            switch frame.kind {
            case .open:
                callStarted()
                open(frame, context: context)
            case .message:
                let bytes = frame.payload.readBytes(length: frame.payload.readableBytes) ?? []
                // A direct call's message is kept until its end; a stream's goes to GRPCCore.
                switch pendingDirect.received(bytes, on: frame.stream) {
                case .kept:
                    break
                case .refused:
                    let status = Status(
                        code: .resourceExhausted,
                        message: transport.limits.requestBudget.refusal(for: bytes.count))
                    handle(.refused(stream: frame.stream, status: status), context: context)
                case .notPending:
                    if let record = streams[frame.stream], let requests = record.requests {
                        unended.received(on: frame.stream)
                        record.unread.add(bytes.count)
                        flow?.received(bytes.count)
                        requests.yield(.message(bytes))
                    }
                }
            case .end:
                guard let call = pendingDirect.remove(frame.stream) else {
                    unended.remove(frame.stream)
                    streams[frame.stream]?.requests?.finish()
                    return
                }
                if let answer = transport.answerAtOnce(
                    call, stream: frame.stream, allocator: context.channel.allocator, caller: peer)
                {
                    answers.write(answer, promise: nil, context: context)
                    flushAtTurnEnd(context)
                    noteIdle()
                    return
                }
                let record = ServerStreamRecord(requests: nil)
                streams[frame.stream] = record
                // `loopExecutor` is set when the handler is added.
                transport.run(
                    call, record: record, stream: frame.stream, channel: context.channel,
                    loopExecutor: loopExecutor!, outbound: outbound, peer: peer)
            case .cancel:
                pendingDirect.remove(frame.stream)
                unended.remove(frame.stream)
                if let record = streams.removeValue(forKey: frame.stream) {
                    flow?.released(record.unread.takeAll())
                    record.cancel()
                    record.fail(RPCError(code: .cancelled, message: "the client cancelled the call"))
                }
                noteIdle()
            case .metadata, .status:
                errorCaught(context: context, error: FramingError("a client sent a server's frame"))
            }
        }
    }

    private func open(_ frame: Frame, context: ChannelHandlerContext) {
        var payload = frame.payload
        let parsed = Result { () throws -> (OpenedMethod, Metadata) in
            let method: OpenedMethod
            if let last = lastMethod, payload.startsWith(shortString: last.bytes) {
                payload.moveReaderIndex(forwardBy: 4 + last.bytes.count)
                method = last
            } else {
                let path = try payload.readShortString()
                // Looked for in the UTF-8 bytes: a search by Character walked grapheme clusters.
                guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), slash != path.startIndex else {
                    throw FramingError("bad method path '\(path)'")
                }
                method = OpenedMethod(
                    bytes: Array(path.utf8), path: path, slash: slash,
                    direct: transport.directMethods.handler(for: path))
                lastMethod = method
            }
            return (method, try payload.readMetadata())
        }
        guard case .success(let (method, metadata)) = parsed, streams[frame.stream] == nil,
            !pendingDirect.contains(frame.stream)
        else {
            errorCaught(context: context, error: FramingError("a malformed or repeated open frame"))
            return
        }
        guard streams.count + pendingDirect.count < Self.maximumOpenCalls else {
            let status = Status(
                code: .resourceExhausted,
                message:
                    "a connection may have \(Self.maximumOpenCalls) calls open at once: wait for one to end, or use another connection"
            )
            handle(.refused(stream: frame.stream, status: status), context: context)
            return
        }
        // A call with a deadline goes through GRPCCore, which enforces it.
        if let (descriptor, handler) = method.direct,
            !metadata[stringValues: "grpc-timeout"].contains(where: { _ in true })
        {
            guard !transport.isShutdown else {
                writeAndFlush(
                    Self.stoppingFrame(stream: frame.stream, allocator: context.channel.allocator).bytes,
                    context: context)
                noteIdle()
                return
            }
            pendingDirect.insert(PendingDirectCall(descriptor: descriptor, handler: handler), for: frame.stream)
            return
        }
        let path = method.path, slash = method.slash
        let descriptor = MethodDescriptor(
            fullyQualifiedService: String(path[..<slash]), method: String(path[path.index(after: slash)...]))
        let (requests, continuation) = AsyncThrowingStream<RPCRequestPart<[UInt8]>, any Error>.makeStream()
        continuation.yield(.metadata(metadata))
        let record = ServerStreamRecord(requests: continuation)
        let writer = ServerFrameWriter(channel: context.channel, stream: frame.stream, outbound: outbound)
        let inbound = FlowControlledRequests(base: requests, unread: record.unread, flow: flow!) // ! set when added
        let stream = RPCStream(
            descriptor: descriptor, inbound: RPCAsyncSequence(wrapping: inbound),
            outbound: RPCWriter.Closable(wrapping: writer))
        if transport.calls.accept(stream, record: record, peer: peer) {
            streams[frame.stream] = record
            unended.received(on: frame.stream)
        } else {
            continuation.finish()
            writeAndFlush(
                Self.stoppingFrame(stream: frame.stream, allocator: context.channel.allocator).bytes, context: context)
            noteIdle()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let outbound = unwrapOutboundIn(data)
        if let ended = outbound.ends {
            unended.remove(ended)
            if let record = streams.removeValue(forKey: ended) {
                record.requests?.finish()
                flow?.released(record.unread.takeAll())
            }
            noteIdle()
        }
        answers.write(outbound.bytes, promise: promise, context: context)
    }

    func flush(context: ChannelHandlerContext) {
        answers.flush(context: context)
    }

    private func writeAndFlush(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        answers.write(bytes, promise: nil, context: context)
        answers.flush(context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        reader.close()
        let open = streams
        streams = [:]
        pendingDirect.removeAll()
        for record in open.values {
            flow?.released(record.unread.takeAll())
            record.cancel()
            record.fail(RPCError(code: .unavailable, message: "the client's connection closed"))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Answers already made (waiting for the turn's end: ``TurnEndFlush``) leave first.
        answers.flush(context: context)
        context.close(promise: nil)
    }
}
