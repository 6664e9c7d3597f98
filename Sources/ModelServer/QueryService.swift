import GRPCCore
import ModelWire

/// The query service as the daemon serves it over HTTP/2: ``QueryServiceHandler``'s methods, but
/// `Apply` takes its request's bytes, as the framed transport does (``DirectMethods``): one in
/// the plain form is read by hand (``ApplyRequestFields``, its plain inserts into runs), any
/// other by SwiftProtobuf, and the answer is written by hand. So a bulk load from any language
/// is saved as one from ModelRemote is.
struct QueryService: RegistrableRPCService {
    let handler: QueryServiceHandler

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        handler.registerMethods(with: &router)
        // Registered again: the router keeps the last handler of a method.
        router.registerHandler(
            forMethod: Modeld_V1_QueryService.Method.Apply.descriptor, deserializer: MessageBytes(),
            serializer: MessageBytes()
        ) { [handler] request, context in
            let bytes = try await ServerRequest(stream: request).message
            return StreamingServerResponse(
                single: ServerResponse(message: try await handler.apply(serialized: bytes), metadata: [:]))
        }
    }
}
