import NIOCore
import NIOHTTP2

/// Closes an HTTP/2 connection that has had no stream open for the idle timeout: it tells the
/// client to go (GOAWAY, so that a client about to call opens a new connection rather than see
/// this one fail its call) and closes the connection once the grace period has passed with no
/// stream open, whether or not the client answered. It sits first in the connection's pipeline;
/// each stream counts itself in and out (``streamOpened(on:)``).
final class HTTP2IdleCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private let grace: TimeAmount
    private var open = 0
    private var timer: Scheduled<Void>?
    /// Whether the client has been told to go.
    private var toldToGo = false
    private var context: ChannelHandlerContext?

    init(after timeout: Duration, grace: Duration) {
        self.timeout = TimeAmount(timeout)
        self.grace = TimeAmount(grace)
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
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: toldToGo ? grace : timeout) { [self] in
            timer = nil
            guard !toldToGo else { return context.close(promise: nil) }
            toldToGo = true
            let goAway = HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
            context.channel.writeAndFlush(goAway, promise: nil)
            arm()
        }
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
