import FramedTransport
import GRPCCore
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Keeps an HTTP/2 connection's peer credentials (`SO_PEERCRED`, read when it was accepted) for
/// its streams.
final class PeerCredentialsHolder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let credentials: PeerCredentials?

    init(_ credentials: PeerCredentials?) {
        self.credentials = credentials
    }
}

/// Puts the connection's verified peer credentials into each request's headers
/// (``PeerCredentials/uidKey`` and the others), after removing any the client sent, so that
/// ``CallerInterceptor`` can trust them.
final class PeerCredentialsHeaders: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload

    private let credentials: PeerCredentials

    init(_ credentials: PeerCredentials?) {
        self.credentials = credentials ?? .unknown
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .headers(var headers) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        for key in [PeerCredentials.uidKey, PeerCredentials.gidKey, PeerCredentials.pidKey] {
            headers.headers.remove(name: key)
        }
        headers.headers.add(name: PeerCredentials.uidKey, value: String(credentials.uid))
        headers.headers.add(name: PeerCredentials.gidKey, value: String(credentials.gid))
        headers.headers.add(name: PeerCredentials.pidKey, value: String(credentials.pid))
        context.fireChannelRead(wrapInboundOut(.headers(headers)))
    }

    /// Adds the handler to a new stream's pipeline, with its connection's credentials.
    static func add(to stream: any Channel) throws {
        let credentials = try stream.parent?.pipeline.syncOperations.handler(type: PeerCredentialsHolder.self)
            .credentials
        try stream.pipeline.syncOperations.addHandler(PeerCredentialsHeaders(credentials), position: .first)
    }
}

/// Runs each call with its caller's credentials as ``PeerCredentials/current``: on the framed
/// socket the transport has set them already; on HTTP/2 they come from the headers
/// ``PeerCredentialsHeaders`` wrote (a stream-producing handler gets them too).
struct CallerInterceptor: ServerInterceptor {
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        if PeerCredentials.current != nil { return try await next(request, context) }
        let caller = Self.credentials(in: request.metadata)
        var response = try await PeerCredentials.$current.withValue(caller) { try await next(request, context) }
        if case .success(var contents) = response.accepted {
            let producer = contents.producer
            contents.producer = { writer in
                try await PeerCredentials.$current.withValue(caller) { try await producer(writer) }
            }
            response.accepted = .success(contents)
        }
        return response
    }

    /// The credentials in `metadata`, or ``PeerCredentials/unknown``.
    static func credentials(in metadata: Metadata) -> PeerCredentials {
        func value(_ key: String) -> String? { metadata[stringValues: key].first(where: { _ in true }) }
        guard let uid = value(PeerCredentials.uidKey).flatMap(UInt32.init),
            let gid = value(PeerCredentials.gidKey).flatMap(UInt32.init),
            let pid = value(PeerCredentials.pidKey).flatMap(Int32.init)
        else { return .unknown }
        return PeerCredentials(uid: uid, gid: gid, pid: pid)
    }
}
