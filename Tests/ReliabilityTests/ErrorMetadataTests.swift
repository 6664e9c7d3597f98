import FramedTransport
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelFixtures
import ModelTesting
import ModelWire
import Testing

/// Every error a client can cause carries `modeld-error-code` and `modeld-error-context-bin`
/// (docs/daemon.md), also a request
/// that is not valid protobuf, which gRPC's machinery refuses before any handler runs: over
/// HTTP/2 and on the framed socket, for a unary and a server-streaming method.
@Suite struct ErrorMetadataTests {
    static let garbage: [[UInt8]] = [[UInt8](repeating: 0xFF, count: 64), Array("not protobuf".utf8)]

    static func check<Transport: ClientTransport>(_ grpc: GRPCClient<Transport>, over transport: String) async {
        for bytes in garbage {
            for descriptor in [
                Modeld_V1_StoreService.Method.CreateStore.descriptor, Modeld_V1_QueryService.Method.Fetch.descriptor,
            ] {
                let error = await #expect(throws: RPCError.self) {
                    try await grpc.serverStreaming(
                        request: ClientRequest(message: bytes), descriptor: descriptor, serializer: RawBytes(),
                        deserializer: RawBytes(), options: .defaults
                    ) { response in
                        for try await _ in response.messages {}
                    }
                }
                #expect(error?.code == .invalidArgument, "\(transport) \(descriptor): \(String(describing: error))")
                #expect(
                    error?.metadata[stringValues: ModelError.codeMetadataKey].first(where: { _ in true })
                        == "invalidArgument", "\(transport) \(descriptor): \(String(describing: error))")
                // The context entry too, an empty object: this refusal has none.
                #expect(
                    error?.metadata[binaryValues: ModelError.contextMetadataKey].first(where: { _ in true })
                        == Array("{}".utf8), "\(transport) \(descriptor): \(String(describing: error))")
            }
        }
    }

    @Test func aRequestThatIsNotProtobufCarriesTheErrorCode() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            let transport = try HTTP2ClientTransport.Posix(
                target: .unixDomainSocket(path: store.socketPath), transportSecurity: .plaintext)
            try await withGRPCClient(transport: transport) { await Self.check($0, over: "HTTP/2") }
            try await withFramedGRPCClient(store) { await Self.check($0, over: "framed") }
        }
    }
}
