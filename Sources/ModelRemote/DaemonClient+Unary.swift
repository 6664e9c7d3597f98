import FramedTransport
import GRPCCore
import GRPCProtobuf
import ModelWire
import SwiftProtobuf

/// A unary method of modeld's services: its request and response types and its descriptor, as
/// the generated code declares them.
protocol UnaryMethod {
    associatedtype Input: SwiftProtobuf.Message
    associatedtype Output: SwiftProtobuf.Message
    static var descriptor: MethodDescriptor { get }
}

extension Modeld_V1_DaemonService.Method.Status: UnaryMethod {}
extension Modeld_V1_StoreService.Method.CreateStore: UnaryMethod {}
extension Modeld_V1_StoreService.Method.ListStores: UnaryMethod {}
extension Modeld_V1_StoreService.Method.GetStore: UnaryMethod {}
extension Modeld_V1_StoreService.Method.DropStore: UnaryMethod {}
extension Modeld_V1_StoreService.Method.GetSchema: UnaryMethod {}
extension Modeld_V1_StoreService.Method.ApplySchema: UnaryMethod {}
extension Modeld_V1_QueryService.Method.Count: UnaryMethod {}
extension Modeld_V1_QueryService.Method.Aggregate: UnaryMethod {}
extension Modeld_V1_QueryService.Method.GetObjects: UnaryMethod {}
extension Modeld_V1_QueryService.Method.Apply: UnaryMethod {}
extension Modeld_V1_QueryService.Method.BatchDelete: UnaryMethod {}
extension Modeld_V1_QueryService.Method.BatchUpdate: UnaryMethod {}
extension Modeld_V1_SessionService.Method.OpenSession: UnaryMethod {}
extension Modeld_V1_SessionService.Method.CloseSession: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Stage: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Save: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Rollback: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Count: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Aggregate: UnaryMethod {}
extension Modeld_V1_SessionService.Method.GetObjects: UnaryMethod {}
extension Modeld_V1_SessionService.Method.DescribeSession: UnaryMethod {}

/// How a client makes unary calls: straight through the framed transport, or through GRPCCore.
protocol UnaryCaller: Sendable {
    func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(_ method: MethodDescriptor, _ request: Request) async throws -> Response
}

/// Unary calls through GRPCCore's client (over HTTP/2).
struct GRPCUnaryCaller<Transport: ClientTransport>: UnaryCaller {
    let client: GRPCClient<Transport>

    func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(_ method: MethodDescriptor, _ request: Request) async throws -> Response {
        try await client.unary(request: ClientRequest(message: request), descriptor: method, serializer: ProtobufSerializer<Request>(),
                               deserializer: ProtobufDeserializer<Response>(), options: .defaults) { try $0.message }
    }
}

/// Unary calls straight through the framed transport (``FramedClientTransport/unary(_:request:)``),
/// with GRPCCore's coding (and its errors) for the messages.
struct FramedUnaryCaller: UnaryCaller {
    let transport: FramedClientTransport

    func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(_ method: MethodDescriptor, _ request: Request) async throws -> Response {
        let bytes: [UInt8] = try ProtobufSerializer<Request>().serialize(request)
        return try ProtobufDeserializer<Response>().deserialize(try await transport.unary(method, request: bytes))
    }
}

extension DaemonClient {
    /// Makes the unary call `method` with `request`.
    func unary<Method: UnaryMethod>(_ method: Method.Type, _ request: Method.Input) async throws -> Method.Output {
        try await unaryCaller.unary(Method.descriptor, request)
    }
}
