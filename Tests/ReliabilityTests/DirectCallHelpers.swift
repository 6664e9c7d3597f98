import FramedTransport
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelRemote
import ModelTesting
import ModelWire
import Testing

// Helpers the direct-call tests share with the other reliability tests: calls cancelled
// part-way, requests that are no message, and clients of their own on a store's sockets.

/// Counts what `descriptor` matches in a child task cancelled after `delay`: the error it ended
/// with, or nil if it answered first.
func countCancelled(after delay: Duration, _ descriptor: FetchDescriptor, client: DaemonClient, store: TestStore) async
    -> (any Error)?
{
    await errorOfCall(cancelledAfter: delay) { _ = try await client.count(descriptor, in: store.name) }
}

/// Runs `call` in a child task cancelled after `delay`: the error it ended with, or nil if it
/// answered first.
func errorOfCall(cancelledAfter delay: Duration, _ call: @escaping @Sendable () async throws -> Void) async
    -> (any Error)?
{
    await withTaskGroup(of: (any Error)?.self) { group in
        group.addTask {
            do {
                try await call()
                return nil
            } catch {
                return error
            }
        }
        try? await Task.sleep(for: delay)
        group.cancelAll()
        return await group.next() ?? nil
    }
}

/// The error a unary call of `method` ends with when its request is bytes that are no message
/// (an issue is recorded if it does not fail).
func refusalOfUndecodableRequest(_ method: MethodDescriptor, _ grpc: GRPCClient<some ClientTransport>) async
    -> RPCError?
{
    await #expect(throws: RPCError.self) {
        _ = try await grpc.unary(
            request: ClientRequest(message: [0xFF, 0xFF, 0xFF]), descriptor: method,
            serializer: RawBytes(), deserializer: RawBytes(), options: .defaults
        ) { try $0.message }
    }
}

/// Runs `body` with a gRPC client of its own on the store's framed socket.
func withFramedGRPCClient<T: Sendable>(
    _ store: TestStore, _ body: (GRPCClient<FramedClientTransport>) async throws -> T
) async throws -> T {
    let path = try #require(DefaultLocations.framedSocketPath(for: store.socketPath))
    return try await withGRPCClient(transport: FramedClientTransport(path: path)) { try await body($0) }
}

/// Runs `body` with a query-service client of its own over `transport`.
func withQueryClient<T: Sendable>(
    _ store: TestStore, _ transport: DaemonTransport,
    _ body: (any Modeld_V1_QueryService.ClientProtocol) async throws -> T
) async throws -> T {
    switch transport {
    case .http2:
        let http2 = try HTTP2ClientTransport.Posix(
            target: .unixDomainSocket(path: store.socketPath), transportSecurity: .plaintext)
        return try await withGRPCClient(transport: http2) {
            try await body(Modeld_V1_QueryService.Client(wrapping: $0))
        }
    case .framed:
        return try await withFramedGRPCClient(store) { try await body(Modeld_V1_QueryService.Client(wrapping: $0)) }
    }
}
