import GRPCCore
import GRPCProtobuf
import ModelCore
import ModelWire
import SwiftProtobuf

/// Every error a client can cause carries modeld's error metadata (`modeld-error-code`, and
/// the context), also those gRPC raises itself: a request that is not valid protobuf, or that
/// fails in gRPC's machinery before a handler runs.
enum ErrorMetadata {
    /// `error` with modeld's metadata, as a `ModelError` of the code its status maps to, when it
    /// has none.
    static func completed(_ error: RPCError) -> RPCError {
        guard error.metadata[stringValues: ModelError.codeMetadataKey].first(where: { _ in true }) == nil else {
            return error
        }
        return RPCError(ModelError(ModelError(error).code, readable(error.message)))
    }

    /// gRPC's words for bytes that are no request ("Can't deserialize to message of type
    /// Modeld_V1_StoreFetchRequest."), in the protos' names.
    private static func readable(_ message: String) -> String {
        let prefix = "Can't deserialize to message of type "
        guard message.hasPrefix(prefix) else { return message }
        var type = String(message.dropFirst(prefix.count))
        if type.hasSuffix(".") { type.removeLast() }
        if type.hasPrefix("Modeld_V1_") { type = "modeld.v1." + type.dropFirst("Modeld_V1_".count) }
        return
            "the request is not a valid \(type) message (protobuf bytes of that message were expected): check the method called and the message sent"
    }

    /// The metadata of a status a transport gives itself (the framed socket's refusals), as a
    /// `ModelError` of the code the status maps to.
    @Sendable static func metadata(of status: Status) -> Metadata {
        completed(RPCError(code: RPCError.Code(status.code) ?? .unknown, message: status.message)).metadata
    }

    /// Decodes a request message, refusing bytes that are not one with `invalidArgument` and
    /// the metadata (on the framed socket's direct methods, which decode without GRPCCore).
    static func request<Request: SwiftProtobuf.Message>(_ type: Request.Type, from bytes: [UInt8]) throws -> Request {
        do {
            return try ProtobufDeserializer<Request>().deserialize(bytes)
        } catch let error as RPCError {
            throw completed(error)
        }
    }
}

/// Completes the errors of GRPCCore's servers (``ErrorMetadata/completed(_:)``).
struct ErrorMetadataInterceptor: ServerInterceptor {
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>,
        context: ServerContext,
        next: @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        do {
            return try await next(request, context)
        } catch let error as RPCError {
            throw ErrorMetadata.completed(error)
        }
    }
}
