import FramedTransport
import GRPCCore

/// Runs each call with its caller's credentials as ``PeerCredentials/current``: both transports
/// set them from their connection (`SO_PEERCRED`) before GRPCCore's server runs a call; a call
/// that reached a handler without them runs as ``PeerCredentials/unknown``. Headers that name a
/// caller are never believed (the HTTP/2 transport drops them, ``HTTP2Request/metadata``).
struct CallerInterceptor: ServerInterceptor {
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        if PeerCredentials.current != nil { return try await next(request, context) }
        return try await PeerCredentials.$current.withValue(.unknown) { try await next(request, context) }
    }
}
