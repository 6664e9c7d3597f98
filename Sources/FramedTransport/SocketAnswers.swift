#if canImport(Glibc)
    import Glibc
#endif
import NIOCore

/// What a framed server connection writes, sent straight into its socket where it can be: the
/// connection's socket is accepted by modeld (``SocketAcceptor``), so its descriptor is known,
/// and the answers of a loop's turn go out with one `send` at its end, without SwiftNIO's
/// pipeline, its queue of pending writes and its flush (docs/performance.md, "Answers written
/// straight into the socket"). What the socket does not take at once goes through SwiftNIO, and
/// while SwiftNIO holds any of the connection's writes not yet wholly on the socket, everything
/// goes through it behind them, so that the bytes of two writes never mix and answers leave in
/// the order they were written. A write with a promise goes through SwiftNIO too (its writer
/// waits for the socket to take it). Used on the connection's event loop only, where SwiftNIO
/// cannot close the socket under a write. A class: SwiftNIO may call the handler back while one
/// of these writes or flushes (a flush that changes the channel's writability flushes again).
final class SocketAnswers {
    /// The connection's socket, which SwiftNIO owns and closes.
    let socket: CInt
    /// Bytes written and not yet sent: they go at the next ``flush(context:)``.
    private var held: ByteBuffer?
    /// Writes handed to SwiftNIO that the socket has not wholly taken yet.
    private var inNIO = 0
    /// Whether SwiftNIO was handed a write since its last flush.
    private var unflushedInNIO = false

    init(socket: CInt) {
        self.socket = socket
    }

    /// Takes `bytes` to send at the next flush, or, with a promise or behind writes SwiftNIO
    /// holds, hands them to SwiftNIO.
    func write(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        guard promise == nil, inNIO == 0 else {
            if let held = takeHeld() { enqueue(held, promise: nil, context: context) }
            return enqueue(bytes, promise: promise, context: context)
        }
        if held == nil {
            held = bytes
        } else {
            var bytes = bytes
            held!.writeBuffer(&bytes) // `!`: not nil, checked above
        }
    }

    /// Sends what is held into the socket, as much as it takes at once, and the rest through
    /// SwiftNIO; flushes SwiftNIO if it was handed anything. A socket that refuses a send with
    /// an error (the client closed it: EPIPE, ECONNRESET) closes the channel, as SwiftNIO's own
    /// write would.
    func flush(context: ChannelHandlerContext) {
        if var bytes = takeHeld() {
            if inNIO == 0, context.channel.isActive {
                let sent = bytes.withUnsafeReadableBytes { sendWhatFits($0, into: socket) }
                if sent.failed { return context.close(promise: nil) }
                bytes.moveReaderIndex(forwardBy: sent.written)
            }
            if bytes.readableBytes > 0 { enqueue(bytes, promise: nil, context: context) }
        }
        if unflushedInNIO {
            unflushedInNIO = false
            context.flush()
        }
    }

    private func takeHeld() -> ByteBuffer? {
        defer { held = nil }
        return held
    }

    /// Hands `bytes` to SwiftNIO, counted until the socket has taken them (or the write failed).
    private func enqueue(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        inNIO += 1
        written.futureResult.assumeIsolated().whenComplete { _ in self.inNIO -= 1 }
        context.write(NIOAny(bytes), promise: written)
        unflushedInNIO = true
    }
}
