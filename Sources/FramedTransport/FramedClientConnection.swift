import GRPCCore
import NIOCore
import Synchronization

/// One connection on the client: routes response frames to their calls. Its table of calls is
/// shared with the callers' tasks, so it sits behind a lock. Its channel's ``ClientFrameReader``
/// hands it the frames.
final class FramedClientConnection: Sendable {
    typealias Responses = ResponseParts

    /// Where a call's response frames go: its stream of response parts, or a direct unary call.
    enum Sink: Sendable {
        case stream(Responses)
        case unary(UnaryCall)
    }

    let channel: any Channel
    /// The channel's socket (SwiftNIO's), for a call's frames written from the event loop at once.
    let socket: CInt
    /// Writes handed to SwiftNIO and not yet wholly on the socket (counted by
    /// ``ClientFrameReader``'s outbound side): while there are any, no write goes straight in.
    let writesInNIO = Atomic<Int>(0)
    private let calls = Mutex<(next: UInt32, open: OpenCalls, closed: Bool)>((1, OpenCalls(), false))

    init(channel: any Channel, socket: CInt) {
        self.channel = channel
        self.socket = socket
    }

    /// A new call's number and response stream, whose waiting messages count against `flow`
    /// when given; nil once the connection has closed.
    func register(flow: InboundFlow? = nil) -> (UInt32, Responses)? {
        let responses = Responses(flow: flow)
        return register(.stream(responses)).map { ($0, responses) }
    }

    /// A new direct unary call's number; nil once the connection has closed.
    func register(_ call: UnaryCall) -> UInt32? {
        register(.unary(call))
    }

    private func register(_ sink: Sink) -> UInt32? {
        calls.withLock { calls -> UInt32? in
            guard !calls.closed else { return nil }
            let id = calls.next
            calls.next &+= 2
            calls.open.insert(sink, for: id)
            return id
        }
    }

    /// Forgets a call; true if it had not ended (its status had not come).
    func unregister(_ id: UInt32) -> Bool {
        calls.withLock { $0.open.remove(id) } != nil
    }

    /// A frame from the daemon (on the event loop); one this side never gets closes the connection.
    func received(_ frame: Frame, context: ChannelHandlerContext) {
        var frame = frame
        switch frame.kind {
        case .metadata:
            guard let metadata = try? frame.payload.readMetadata() else { return context.close(promise: nil) }
            if case .stream(let call) = calls.withLock({ $0.open.sink(for: frame.stream) }) {
                call.yield(.metadata(metadata))
            }
        case .message:
            let bytes = frame.payload.readBytes(length: frame.payload.readableBytes) ?? []
            switch calls.withLock({ $0.open.sink(for: frame.stream) }) {
            case .stream(let call): call.yield(.message(bytes))
            case .unary(let call): call.received(bytes)
            case nil: break
            }
        case .status:
            guard let raw = frame.payload.readInteger(as: UInt8.self),
                let message = try? frame.payload.readShortString(),
                let metadata = try? frame.payload.readMetadata()
            else { return context.close(promise: nil) }
            let code = Status.Code(rawValue: Int(raw)) ?? .unknown
            switch calls.withLock({ $0.open.remove(frame.stream) }) {
            case .stream(let call):
                call.yield(.status(Status(code: code, message: message), metadata))
                call.finish()
            case .unary(let call):
                call.finished(Status(code: code, message: message), metadata: metadata)
            case nil:
                break
            }
        case .open, .end, .cancel:
            context.close(promise: nil)
        }
    }

    /// The connection closed: the calls under way fail with UNAVAILABLE, and no more can start.
    func closed() {
        let open = calls.withLock { calls in
            calls.closed = true
            return calls.open.removeAll()
        }
        let closed = RPCError(code: .unavailable, message: "the connection to modeld closed before the call ended")
        for sink in open {
            switch sink {
            case .stream(let call): call.finish(throwing: closed)
            case .unary(let call): call.fail(closed)
            }
        }
    }
}

/// Reads a client connection's frames from its socket's bytes and hands each to the connection,
/// in the loop's turn that read it (no `ByteToMessageHandler`, and no frame boxed in an `NIOAny`
/// for a handler after it). The channel's only handler. On the way out it counts the writes
/// SwiftNIO holds until they are wholly on the socket, so that no direct write
/// (``FramedClientConnection/sendCall(stream:descriptor:request:)``) comes between their bytes.
final class ClientFrameReader: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    let connection: FramedClientConnection
    /// The start of a frame whose rest has not arrived yet.
    private var partial: ByteBuffer?

    init(connection: FramedClientConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if var partial {
            self.partial = nil
            partial.writeBuffer(&buffer)
            buffer = partial
        }
        do {
            while let header = try Frame.Header(buffer), let frame = buffer.readFrame(header) {
                connection.received(frame, context: context)
            }
        } catch {
            return context.close(promise: nil)
        }
        if buffer.readableBytes > 0 { partial = buffer }
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        let connection = connection
        connection.writesInNIO.add(1, ordering: .relaxed)
        written.futureResult.whenComplete { _ in connection.writesInNIO.subtract(1, ordering: .relaxed) }
        context.write(data, promise: written)
    }
}

/// The calls under way on a connection, by stream: the one usually under way in a slot of its
/// own (a caller's calls come one after another), any beside it in a table. A table alone cost a
/// point read four hashes of its stream number (about 700 of the client's instructions).
struct OpenCalls {
    typealias Sink = FramedClientConnection.Sink

    private var only: (id: UInt32, sink: Sink)?
    private var others: [UInt32: Sink] = [:]

    mutating func insert(_ sink: Sink, for id: UInt32) {
        if only == nil { only = (id, sink) } else { others[id] = sink }
    }

    func sink(for id: UInt32) -> Sink? {
        if let only, only.id == id { return only.sink }
        return others.isEmpty ? nil : others[id]
    }

    /// Removes the call `id`; its sink, or nil if it was not under way.
    mutating func remove(_ id: UInt32) -> Sink? {
        if let current = only, current.id == id {
            only = nil
            return current.sink
        }
        return others.isEmpty ? nil : others.removeValue(forKey: id)
    }

    /// Removes every call; their sinks.
    mutating func removeAll() -> [Sink] {
        var all = Array(others.values)
        if let only { all.append(only.sink) }
        only = nil
        others = [:]
        return all
    }
}
