import Foundation
import ModelCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves the daemon's metrics over HTTP/1.1 for Prometheus to scrape (`GET /metrics`), on a
/// loopback address only: the metrics name stores, and the daemon is not meant to be on a
/// network. Each connection answers one request and closes; one that sends nothing for ten
/// seconds is closed.
final class MetricsHTTPServer: Sendable {
    let channel: any Channel
    /// The address it listens on (its port chosen by the system when asked for port 0).
    let address: SocketAddress

    private init(channel: any Channel) {
        self.channel = channel
        self.address = channel.localAddress! // ! a bound channel has one
    }

    /// Binds `address` (`127.0.0.1:9464`, `[::1]:9464`, `localhost:9464`) and serves the text
    /// `metrics` gives.
    static func start(address: String, metrics: @escaping @Sendable () async -> String) async throws
        -> MetricsHTTPServer
    {
        let socketAddress = try loopbackAddress(address)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(IdleStateHandler(readTimeout: .seconds(10)))
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(MetricsHTTPHandler(metrics: metrics))
                }
            }
            .bind(to: socketAddress).get()
        return MetricsHTTPServer(channel: channel)
    }

    func close() async {
        try? await channel.close()
    }

    /// The socket address of `text`, refused unless it is a loopback one.
    static func loopbackAddress(_ text: String) throws(ModelError) -> SocketAddress {
        let refusal = ModelError(
            .invalidArgument,
            "--metrics-address '\(text)' is not a loopback address with a port (127.0.0.1:9464, [::1]:9464, localhost:9464): the metrics are served to this host only; put a proxy in front to serve them further"
        )
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65_535).contains(port)
        else { throw refusal }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        guard let address = try? SocketAddress(ipAddress: host, port: port) else { throw refusal }
        let isLoopback =
            switch address {
            case .v4: host.hasPrefix("127.")
            case .v6: host == "::1"
            default: false
            }
        guard isLoopback else { throw refusal }
        return address
    }
}

/// Answers one request: the metrics for `GET /metrics`, 404 or 405 otherwise.
private final class MetricsHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let metrics: @Sendable () async -> String
    private var head: HTTPRequestHead?

    init(metrics: @escaping @Sendable () async -> String) {
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
            guard head.method == .GET || head.method == .HEAD else {
                respond(context, .methodNotAllowed, "only GET /metrics is served\n", head: head)
                return
            }
            guard path == "/metrics" else {
                respond(context, .notFound, "modeld serves its metrics at /metrics\n", head: head)
                return
            }
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            let metrics = metrics
            Task {
                let text = await metrics()
                loop.execute {
                    let (handler, context) = bound.value
                    handler.respond(context, .ok, text, head: head)
                }
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func respond(
        _ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ text: String, head: HTTPRequestHead
    ) {
        var headers = HTTPHeaders()
        headers.add(
            name: "Content-Type", value: status == .ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        headers.add(name: "Connection", value: "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        if head.method != .HEAD {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}

extension ServerConfiguration {
    /// Checks a metrics address (``metricsAddress``): a loopback address with a port.
    public static func checkMetricsAddress(_ text: String) throws(ModelError) {
        _ = try MetricsHTTPServer.loopbackAddress(text)
    }
}
