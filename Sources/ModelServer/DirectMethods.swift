import FramedTransport
import GRPCCore
import GRPCProtobuf
import ModelCore
import ModelWire
import SwiftProtobuf

extension DirectMethods {
    /// Every method of modeld's services, for the framed transport to run without GRPCCore's
    /// server machinery. A method left out here is still served, through GRPCCore.
    static func modeld(core: DaemonCore) -> DirectMethods {
        let stores = StoreServiceHandler(core: core), sessions = SessionServiceHandler(core: core)
        let queries = QueryServiceHandler(core: core), daemon = DaemonServiceHandler(core: core)
        var methods = DirectMethods()
        methods.add(Modeld_V1_DaemonService.Method.Status.descriptor, daemon.status)
        methods.add(Modeld_V1_DaemonService.Method.Metrics.descriptor, daemon.metrics)

        methods.add(Modeld_V1_StoreService.Method.CreateStore.descriptor, stores.createStore)
        methods.add(Modeld_V1_StoreService.Method.ListStores.descriptor, stores.listStores)
        methods.add(Modeld_V1_StoreService.Method.GetStore.descriptor, stores.getStore)
        methods.add(Modeld_V1_StoreService.Method.DropStore.descriptor, stores.dropStore)
        methods.add(Modeld_V1_StoreService.Method.GetSchema.descriptor, stores.getSchema)
        methods.add(Modeld_V1_StoreService.Method.ApplySchema.descriptor, stores.applySchema)
        methods.add(Modeld_V1_StoreService.Method.SetHistoryRetention.descriptor, stores.setHistoryRetention)
        methods.add(Modeld_V1_StoreService.Method.GrantAccess.descriptor, stores.grantAccess)
        methods.add(Modeld_V1_StoreService.Method.RevokeAccess.descriptor, stores.revokeAccess)

        methods.addFetch(Modeld_V1_QueryService.Method.Fetch.descriptor, queries.fetch) {
            try queries.fetchAtOnce(serialized: $0, caller: $1)
        }
        methods.addServerStreaming(Modeld_V1_QueryService.Method.History.descriptor, queries.history)
        methods.add(Modeld_V1_QueryService.Method.Count.descriptor, queries.count) {
            try queries.countAtOnce(serialized: $0, caller: $1)
        }
        methods.add(Modeld_V1_QueryService.Method.Aggregate.descriptor, queries.aggregate)
        methods.addObjects(Modeld_V1_QueryService.Method.GetObjects.descriptor, queries.objects) {
            try queries.objectsAtOnce(serialized: $0, caller: $1)
        }
        methods.addApply(Modeld_V1_QueryService.Method.Apply.descriptor, queries)
        methods.add(Modeld_V1_QueryService.Method.BatchDelete.descriptor, queries.batchDelete)
        methods.add(Modeld_V1_QueryService.Method.BatchUpdate.descriptor, queries.batchUpdate)
        methods.add(Modeld_V1_QueryService.Method.DeleteHistory.descriptor, queries.deleteHistory)

        methods.add(Modeld_V1_SessionService.Method.OpenSession.descriptor, sessions.openSession)
        methods.add(Modeld_V1_SessionService.Method.CloseSession.descriptor, sessions.closeSession)
        methods.add(Modeld_V1_SessionService.Method.Stage.descriptor, sessions.stage)
        methods.register(Modeld_V1_SessionService.Method.Save.descriptor) { bytes, _ in
            try await sessions.saveResponse(try ErrorMetadata.request(Modeld_V1_SaveRequest.self, from: bytes))
                .serializedBytes()
        }
        methods.add(Modeld_V1_SessionService.Method.Rollback.descriptor, sessions.rollback)
        methods.addFetch(Modeld_V1_SessionService.Method.Fetch.descriptor, sessions.fetch)
        methods.add(Modeld_V1_SessionService.Method.Count.descriptor, sessions.count)
        methods.add(Modeld_V1_SessionService.Method.Aggregate.descriptor, sessions.aggregate)
        methods.addObjects(Modeld_V1_SessionService.Method.GetObjects.descriptor, sessions.objects)
        methods.add(Modeld_V1_SessionService.Method.DescribeSession.descriptor, sessions.describeSession)
        return methods
    }

    /// Runs `method` with `handler`, decoding and encoding messages as GRPCCore's server does
    /// (the same errors for a request that does not decode).
    /// With `immediately`, calls are first offered to it (``DirectMethods/ImmediateHandler``).
    private mutating func add<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ handler: @escaping @Sendable (Request, ServerContext) async throws -> Response,
        immediately: DirectMethods.ImmediateHandler? = nil
    ) {
        let unary: UnaryHandler = { bytes, context in
            let request = try ErrorMetadata.request(Request.self, from: bytes)
            return try ProtobufSerializer<Response>().serialize(try await handler(request, context))
        }
        register(method, immediately: immediately, otherwise: unary)
    }

    /// Runs the server-streaming `method` with `handler`, which writes its responses as GRPCCore's
    /// server would have it write them.
    private mutating func addServerStreaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor,
        _ handler: @escaping @Sendable (Request, RPCWriter<Response>, ServerContext) async throws -> Void
    ) {
        registerServerStreaming(method) { bytes, context, responses in
            let request = try ErrorMetadata.request(Request.self, from: bytes)
            try await handler(request, RPCWriter(wrapping: SerializingWriter<Response>(responses: responses)), context)
        }
    }
}

extension DirectMethods {
    /// Runs a fetch method with `handler`, which writes its responses' bytes itself
    /// (``FetchResponseSink/direct(_:)``).
    /// With `immediately`, calls are first offered to it (``DirectMethods/ImmediateHandler``).
    fileprivate mutating func addFetch<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ handler: @escaping @Sendable (Request, FetchResponseSink) async throws -> Void,
        immediately: DirectMethods.ImmediateHandler? = nil
    ) {
        let streaming: ServerStreamingHandler = { bytes, _, responses in
            try await handler(try ErrorMetadata.request(Request.self, from: bytes), .direct(responses))
        }
        registerServerStreaming(method, immediately: immediately, otherwise: streaming)
    }
}

extension DirectMethods {
    /// Runs a `GetObjects` method with `handler`, writing its `GetObjectsResponse` by hand: the
    /// message is a `FetchResponse` with only `objects`, so ``FetchResponseEncoder`` writes it.
    /// With `immediately`, calls are first offered to it (``DirectMethods/ImmediateHandler``).
    fileprivate mutating func addObjects<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor,
        _ handler: @escaping @Sendable (Request, ServerContext) async throws -> [ObjectSnapshot],
        immediately: DirectMethods.ImmediateHandler? = nil
    ) {
        let unary: UnaryHandler = { bytes, context in
            FetchResponseEncoder.objects(
                try await handler(try ErrorMetadata.request(Request.self, from: bytes), context))
        }
        register(method, immediately: immediately, otherwise: unary)
    }
}

extension DirectMethods {
    /// Runs `Apply`, reading a request in the plain form by hand (``ApplyRequestFields``) and
    /// any other through SwiftProtobuf, and writing its `SaveResult` by hand; a save of insert
    /// runs alone, on the framed transport, without a task (``QueryServiceHandler/applyDeferred(serialized:caller:answer:)``).
    fileprivate mutating func addApply(_ method: MethodDescriptor, _ queries: QueryServiceHandler) {
        register(method, deferred: { try queries.applyDeferred(serialized: $0, caller: $1, answer: $2) }) { bytes, _ in
            try await queries.applyResponse(serialized: bytes).serializedBytes()
        }
    }
}

/// Encodes each response a handler writes and sends it on a direct call.
private struct SerializingWriter<Response: SwiftProtobuf.Message>: RPCWriterProtocol {
    let responses: DirectResponseWriter

    func write(_ element: Response) async throws {
        try await responses.write(try ProtobufSerializer<Response>().serialize(element))
    }

    func write(contentsOf elements: some Sequence<Response>) async throws {
        for element in elements { try await write(element) }
    }
}
