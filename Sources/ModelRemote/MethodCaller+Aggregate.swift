import GRPCCore
import GRPCProtobuf
import ModelCore
import ModelWire
import SwiftProtobuf

extension MethodCaller {
    /// Reads the `AggregateResponse` message with the wire conversions.
    nonisolated(nonsending) func aggregate<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request
    ) async throws -> [AggregateRow] {
        let response: Modeld_V1_AggregateResponse = try await unary(method, request)
        return try response.rows.map { row throws(ModelError) in try [String: Value](wire: row.values) }
    }
}

extension FramedMethodCaller {
    /// Reads the `AggregateResponse` bytes by hand (``AggregateResponseReader``).
    nonisolated(nonsending) func aggregate<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request
    ) async throws -> [AggregateRow] {
        let bytes: [UInt8] = try ProtobufSerializer<Request>().serialize(request)
        return try AggregateResponseReader.rows(serialized: try await transport.unary(method, request: bytes))
    }
}

extension DaemonClient {
    /// Makes the aggregate call `method` with `request`, reading its rows.
    nonisolated(nonsending) func aggregate<Method: UnaryMethod>(_ method: Method.Type, _ request: Method.Input)
        async throws -> [AggregateRow]
    where Method.Output == Modeld_V1_AggregateResponse {
        try await caller.aggregate(Method.descriptor, request)
    }
}
