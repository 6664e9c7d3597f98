import NIOCore

/// Closes an HTTP/2 connection that has had no stream open for the idle timeout plus the grace
/// period. gRPC's own handler tells an idle client to go (GOAWAY and a PING at the idle timeout)
/// but waits for the client to acknowledge before it closes, so a client that never answers
/// would keep its connection (and a file descriptor) for good; this is the backstop. It sits
/// first in the connection's pipeline; each stream counts itself in and out
/// (``streamOpened(on:)``).
final class HTTP2IdleCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var open = 0
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(after timeout: Duration) {
        self.timeout = .nanoseconds(Int64(timeout / .nanoseconds(1)))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        arm()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    private func arm() {
        guard open == 0, timer == nil, let context else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { context.close(promise: nil) }
    }

    /// Counts the stream `stream` in until it closes (on its connection's event loop).
    static func streamOpened(on stream: any Channel) {
        guard let connection = stream.parent,
            let closer = try? connection.pipeline.syncOperations.handler(type: HTTP2IdleCloser.self)
        else { return }
        closer.open += 1
        closer.timer?.cancel()
        closer.timer = nil
        stream.closeFuture.assumeIsolated().whenComplete { _ in
            closer.open -= 1
            closer.arm()
        }
    }
}
