import GRPCCore
import NIOCore

/// The limits a server puts on what one connection may hold of it.
public struct ConnectionLimits: Sendable {
    /// The largest request message accepted; a bigger one is refused with RESOURCE_EXHAUSTED
    /// (its bytes are skipped, and the connection goes on).
    public var maximumMessageSize: Int
    /// How long a frame may take to arrive whole once it has begun; then its call fails with
    /// DEADLINE_EXCEEDED and the connection is closed.
    public var requestTimeout: Duration
    /// How long a connection with no call under way stays open.
    public var idleTimeout: Duration
    /// Bytes held for frames still arriving, across connections.
    public var requestBudget: RequestBudget
    /// Connections open at once, across transports.
    public var connections: ConnectionLimit

    public init(
        maximumMessageSize: Int, requestTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(300),
        requestBudget: RequestBudget? = nil, connections: ConnectionLimit = ConnectionLimit(maximum: .max)
    ) {
        self.maximumMessageSize = maximumMessageSize
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.requestBudget = requestBudget ?? RequestBudget(capacity: 16 * maximumMessageSize)
        self.connections = connections
    }
}

/// What a server connection reads: a whole frame, or a call refused before its frame was read
/// whole (its status says why).
enum ServerInbound {
    case frame(Frame)
    case refused(stream: UInt32, status: Status)
}

/// Reads a server connection's frames under ``ConnectionLimits``: a frame over the message size
/// is skipped and its call refused; a frame that does not arrive in one read reserves its size
/// from the shared ``RequestBudget`` until it is whole (refused, and skipped, when the budget is
/// spent), and must be whole (or skipped) within the request timeout, or its call fails and the
/// connection closes. A frame that arrives whole in one read, as a client's calls do, costs none
/// of this. Not a channel handler of its own: its connection's handler feeds it what it reads
/// and takes its frames in the same turn, without a pipeline between them.
final class FrameReader {
    private let limits: ConnectionLimits
    private var buffer: ByteBuffer?
    /// Told of a frame that did not arrive whole in time (its call refused), after which the
    /// connection is closed; set by the connection's handler, once.
    var timedOut: ((ServerInbound) -> Void)?
    /// Bytes of a refused or oversized frame still to drop.
    private var skipping = 0
    /// The frame being received in parts, what it reserved, and its timeout.
    private var partial: (stream: UInt32, reserved: Int, timeout: Scheduled<Void>)?

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Takes bytes read from the socket (dropping what is left of a refused frame).
    func append(_ incoming: ByteBuffer) {
        var incoming = incoming
        if skipping > 0 {
            let skipped = min(skipping, incoming.readableBytes)
            incoming.moveReaderIndex(forwardBy: skipped)
            skipping -= skipped
            if skipping == 0 { endPartial() }
            guard incoming.readableBytes > 0 else { return }
        }
        if buffer == nil {
            buffer = incoming
        } else {
            buffer!.writeBuffer(&incoming) // ! just checked
        }
    }

    /// The next whole frame, or a call refused, from what has arrived; nil once more bytes are
    /// needed. Throws for bytes that are no frame.
    func next(context: ChannelHandlerContext) throws -> ServerInbound? {
        guard skipping == 0, let header = try buffer.flatMap(Frame.Header.init) else {
            compact()
            return nil
        }
        // A message is held to the limit; the frame that opens a call (its method and metadata)
        // to the limit and a little more.
        if header.length > limits.maximumMessageSize + (header.kind == .message ? 0 : 1024) {
            return refuse(
                header, context: context,
                Status(
                    code: .resourceExhausted,
                    message:
                        "the request is \(header.length) bytes, over modeld's maximum message size of \(limits.maximumMessageSize) bytes (modeld --max-message-size): send less at a time"
                ))
        }
        guard let frame = buffer?.readFrame(header) else {
            if partial == nil { return startPartial(header, context: context) }
            compact()
            return nil
        }
        endPartial()
        return .frame(frame)
    }

    /// Lets go of what has been read.
    private func compact() {
        if buffer?.readableBytes == 0 {
            buffer = nil
        } else if let readerIndex = buffer?.readerIndex, readerIndex > 64 * 1024 {
            buffer?.discardReadBytes()
        }
    }

    /// The frame of `header` has begun but not arrived whole: it reserves its size (nil), or is
    /// refused.
    private func startPartial(
        _ header: Frame.Header, context: ChannelHandlerContext
    ) -> ServerInbound? {
        guard limits.requestBudget.reserve(header.length) else {
            return refuse(
                header, context: context,
                Status(code: .resourceExhausted, message: limits.requestBudget.refusal(for: header.length)))
        }
        partial = (header.stream, header.length, timeout(for: header, context: context))
        return nil
    }

    /// Fails the call and closes the connection unless the frame of `header` (read or skipped)
    /// is over within the request timeout.
    private func timeout(
        for header: Frame.Header, context: ChannelHandlerContext
    ) -> Scheduled<Void> {
        let seconds = limits.requestTimeout.components.seconds
        return context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(limits.requestTimeout)) { [self] in
            endPartial()
            timedOut?(
                .refused(
                    stream: header.stream,
                    status: Status(
                        code: .deadlineExceeded,
                        message:
                            "the request's \(header.length) bytes did not arrive within \(seconds) s (modeld --request-timeout); the connection is closed"
                    )))
            context.close(promise: nil)
        }
    }

    private func endPartial() {
        guard let partial else { return }
        partial.timeout.cancel()
        limits.requestBudget.release(partial.reserved)
        self.partial = nil
    }

    /// Refuses the call of `header` with `status`, dropping the frame's bytes as they come, so
    /// that the connection can go on.
    private func refuse(_ header: Frame.Header, context: ChannelHandlerContext, _ status: Status) -> ServerInbound {
        endPartial()
        if var buffer {
            buffer.moveReaderIndex(forwardBy: Frame.headerSize)
            let dropped = min(header.length, buffer.readableBytes)
            buffer.moveReaderIndex(forwardBy: dropped)
            self.skipping = header.length - dropped
            self.buffer = buffer
            // The rest of the frame must come within the time too.
            if self.skipping > 0 {
                partial = (header.stream, 0, timeout(for: header, context: context))
            }
        }
        return .refused(stream: header.stream, status: status)
    }

    /// The connection closed: what was reserved goes back.
    func close() {
        endPartial()
        buffer = nil
        timedOut = nil
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
