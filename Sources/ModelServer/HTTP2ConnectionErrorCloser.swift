import NIOCore
import NIOHTTP2

/// Closes an HTTP/2 connection once NIOHTTP2 has met a connection error (a bad preface, an
/// undecodable header block, a zero window update, too many resets…). NIOHTTP2 writes the GOAWAY
/// and reports the error, and from then on stops parsing what the client sends but keeps it: a
/// connection left open after its GOAWAY held every byte its client went on sending (gigabytes
/// in seconds). RFC 9113, 5.4.1: "After sending the GOAWAY frame for an error condition, the
/// endpoint MUST close the TCP connection." It sits after NIOHTTP2's handler, as grpc-swift's
/// server connection handler does, and decides the same way: a stream's error is the stream's.
final class HTTP2ConnectionErrorCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame

    /// Whether the daemon is stopping (its connections have been told to go): a new stream's
    /// HEADERS then race the GOAWAY, and NIOHTTP2 reports them as `NoSuchStream`, which must not
    /// end the calls still under way.
    private let isStopping: @Sendable () -> Bool

    init(isStopping: @escaping @Sendable () -> Bool) {
        self.isStopping = isStopping
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if Self.endsConnection(error, stopping: isStopping()) { context.close(promise: nil) }
        context.fireErrorCaught(error)
    }

    static func endsConnection(_ error: any Error, stopping: Bool) -> Bool {
        switch error {
        case is NIOHTTP2Errors.StreamError: false
        case is NIOHTTP2Errors.NoSuchStream: !stopping
        default: true
        }
    }
}
