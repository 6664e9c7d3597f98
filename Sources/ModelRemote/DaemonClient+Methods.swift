import Foundation
import FramedTransport
import GRPCCore
import GRPCProtobuf
import ModelCore
import ModelWire
import SwiftProtobuf

/// A method of modeld's services: its request and response types and its descriptor, as the
/// generated code declares them.
protocol ModeldMethod {
    associatedtype Input: SwiftProtobuf.Message
    associatedtype Output: SwiftProtobuf.Message
    static var descriptor: MethodDescriptor { get }
}

/// A unary method of modeld's services.
protocol UnaryMethod: ModeldMethod {}

extension Modeld_V1_DaemonService.Method.Status: UnaryMethod {}
extension Modeld_V1_DaemonService.Method.Metrics: UnaryMethod {}
extension Modeld_V1_StoreService.Method.CreateStore: UnaryMethod {}
extension Modeld_V1_StoreService.Method.ListStores: UnaryMethod {}
extension Modeld_V1_StoreService.Method.GetStore: UnaryMethod {}
extension Modeld_V1_StoreService.Method.DropStore: UnaryMethod {}
extension Modeld_V1_StoreService.Method.GetSchema: UnaryMethod {}
extension Modeld_V1_StoreService.Method.ApplySchema: UnaryMethod {}
extension Modeld_V1_StoreService.Method.SetHistoryRetention: UnaryMethod {}
extension Modeld_V1_StoreService.Method.GrantAccess: UnaryMethod {}
extension Modeld_V1_StoreService.Method.RevokeAccess: UnaryMethod {}
extension Modeld_V1_QueryService.Method.Count: UnaryMethod {}
extension Modeld_V1_QueryService.Method.Aggregate: UnaryMethod {}
extension Modeld_V1_QueryService.Method.GetObjects: UnaryMethod {}
extension Modeld_V1_QueryService.Method.Apply: UnaryMethod {}
extension Modeld_V1_QueryService.Method.BatchDelete: UnaryMethod {}
extension Modeld_V1_QueryService.Method.BatchUpdate: UnaryMethod {}
extension Modeld_V1_QueryService.Method.DeleteHistory: UnaryMethod {}
extension Modeld_V1_SessionService.Method.OpenSession: UnaryMethod {}
extension Modeld_V1_SessionService.Method.CloseSession: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Stage: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Save: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Rollback: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Count: UnaryMethod {}
extension Modeld_V1_SessionService.Method.Aggregate: UnaryMethod {}
extension Modeld_V1_SessionService.Method.GetObjects: UnaryMethod {}
extension Modeld_V1_SessionService.Method.DescribeSession: UnaryMethod {}
extension Modeld_V1_SessionService.Method.BeginMigration: UnaryMethod {}
extension Modeld_V1_SessionService.Method.StepMigration: UnaryMethod {}
extension Modeld_V1_SessionService.Method.CommitMigration: UnaryMethod {}

/// A server-streaming method of modeld's services.
protocol ServerStreamingMethod: ModeldMethod {}

extension Modeld_V1_QueryService.Method.Fetch: ServerStreamingMethod {}
extension Modeld_V1_QueryService.Method.History: ServerStreamingMethod {}
extension Modeld_V1_QueryService.Method.Watch: ServerStreamingMethod {}
extension Modeld_V1_SessionService.Method.Fetch: ServerStreamingMethod {}

/// How a client makes its calls: straight through the framed transport, or through GRPCCore.
protocol MethodCaller: Sendable {
    nonisolated(nonsending) func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request
    ) async throws -> Response

    /// Calls `method` and hands its responses to `body`; the call ends when `body` returns.
    func serverStreaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message, T: Sendable>(
        _ method: MethodDescriptor, _ request: Request,
        _ body: @Sendable @escaping (RPCAsyncSequence<Response, any Error>) async throws -> T
    ) async throws -> T

    /// Calls the fetch `method` and hands its responses, read into ModelCore's types, to `body`;
    /// with `store`, every URI must be one of that store's.
    func fetch<Request: SwiftProtobuf.Message, T: Sendable>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?,
        _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T

    /// Calls the aggregate `method` and reads its rows (``aggregate(_:_:)`` in
    /// MethodCaller+Aggregate.swift).
    nonisolated(nonsending) func aggregate<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request
    ) async throws -> [AggregateRow]

    /// Calls the `GetObjects` method `method` and reads its objects; with `store`, every URI
    /// must be one of that store's.
    nonisolated(nonsending) func objects<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?
    )
        async throws -> [ObjectSnapshot]

    /// Calls `method`, which answers a `SaveResult` (a session's `Save`), and reads it; URIs
    /// are checked against `store` when given.
    nonisolated(nonsending) func save<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?
    ) async throws
        -> SaveOutcome

    /// Calls `Apply`.
    nonisolated(nonsending) func apply(_ call: ApplyCall) async throws -> SaveOutcome

    /// Calls `QueryService/GetObjects` and reads its objects.
    nonisolated(nonsending) func objects(_ call: GetObjectsCall) async throws -> [ObjectSnapshot]

    /// Calls `QueryService/Fetch`, handing its responses to `body`.
    func fetch<T: Sendable>(
        _ call: FetchCall, _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T

    /// Calls `QueryService/Fetch` and returns its whole result, for a fetch whose answer is
    /// bounded (``FetchCollector/isBounded(_:)``).
    nonisolated(nonsending) func fetchWhole(_ call: FetchCall, resultType: FetchDescriptor.ResultType)
        async throws -> FetchResult

    /// Calls the fetch `method` and returns its whole result, for a fetch whose answer is
    /// bounded (a session's); with `store`, every URI must be one of that store's.
    nonisolated(nonsending) func fetchWhole<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?, resultType: FetchDescriptor.ResultType
    ) async throws -> FetchResult

    /// Calls `QueryService/Fetch` for a `body` that takes each response as it comes and keeps
    /// none: the client holds a bounded number of them however slowly `body` takes them.
    func fetchEachBatch<T: Sendable>(
        _ call: FetchCall, _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T

    /// Makes the client-streaming call `method`, its requests written by `produce`.
    func clientStreaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ produce: @Sendable @escaping (RPCWriter<Request>) async throws -> Void
    ) async throws -> Response
}

extension MethodCaller {
    /// Reads the response message with the wire conversions.
    nonisolated(nonsending) func save<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?
    ) async throws
        -> SaveOutcome
    {
        let result: Modeld_V1_SaveResult = try await unary(method, request)
        return try SaveOutcome(wire: result, store: store)
    }

    /// Sends the request message built from `call`.
    nonisolated(nonsending) func apply(_ call: ApplyCall) async throws -> SaveOutcome {
        try await save(Modeld_V1_QueryService.Method.Apply.descriptor, call.wire, store: nil)
    }

    /// Sends the request message built from `call`.
    nonisolated(nonsending) func objects(_ call: GetObjectsCall) async throws -> [ObjectSnapshot] {
        try await objects(Modeld_V1_QueryService.Method.GetObjects.descriptor, call.wire, store: nil)
    }

    /// Sends the request message built from `call`.
    func fetch<T: Sendable>(
        _ call: FetchCall, _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T {
        try await fetch(Modeld_V1_QueryService.Method.Fetch.descriptor, call.wire, store: nil, body)
    }

    /// The responses of ``fetch(_:_:)`` collected.
    nonisolated(nonsending) func fetchWhole(_ call: FetchCall, resultType: FetchDescriptor.ResultType)
        async throws -> FetchResult
    {
        try await fetch(call) { try await FetchCollector.collect($0, resultType: resultType) }
    }

    /// The responses of ``fetch(_:_:store:_:)`` collected.
    nonisolated(nonsending) func fetchWhole<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?, resultType: FetchDescriptor.ResultType
    ) async throws -> FetchResult {
        try await fetch(method, request, store: store) { try await FetchCollector.collect($0, resultType: resultType) }
    }

    /// As ``fetch(_:_:)``: over HTTP/2, the stream's flow control bounds what waits for `body`.
    func fetchEachBatch<T: Sendable>(
        _ call: FetchCall, _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T {
        try await fetch(call, body)
    }

    /// Reads the response message with the wire conversions.
    nonisolated(nonsending) func objects<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?
    )
        async throws -> [ObjectSnapshot]
    {
        let response: Modeld_V1_GetObjectsResponse = try await unary(method, request)
        return try response.objects.map { object throws(ModelError) in try ObjectSnapshot(wire: object, in: store) }
    }

    /// Reads each response message with the wire conversions.
    func fetch<Request: SwiftProtobuf.Message, T: Sendable>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?,
        _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T {
        try await serverStreaming(method, request) { (messages: RPCAsyncSequence<Modeld_V1_FetchResponse, any Error>) in
            try await body(
                RPCAsyncSequence(wrapping: DecodingSequence(base: messages) { try FetchChunk(wire: $0, in: store) }))
        }
    }
}

/// Calls through GRPCCore's client (over HTTP/2).
struct GRPCMethodCaller<Transport: ClientTransport>: MethodCaller {
    let client: GRPCClient<Transport>

    /// Writes the request's bytes straight from `call` (``ApplyCall/serializedBytes()``) and
    /// reads the answer's by hand, as the framed caller does.
    nonisolated(nonsending) func apply(_ call: ApplyCall) async throws -> SaveOutcome {
        let bytes = try await client.unary(
            request: ClientRequest(message: try call.serializedBytes()),
            descriptor: Modeld_V1_QueryService.Method.Apply.descriptor, serializer: MessageBytes(),
            deserializer: MessageBytes(), options: .defaults
        ) { try $0.message }
        return SaveOutcome(try SaveResultFields(serialized: bytes, in: nil))
    }

    nonisolated(nonsending) func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request
    ) async throws -> Response {
        try await client.unary(
            request: ClientRequest(message: request), descriptor: method, serializer: ProtobufSerializer<Request>(),
            deserializer: ProtobufDeserializer<Response>(), options: .defaults
        ) { try $0.message }
    }

    func serverStreaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message, T: Sendable>(
        _ method: MethodDescriptor, _ request: Request,
        _ body: @Sendable @escaping (RPCAsyncSequence<Response, any Error>) async throws -> T
    ) async throws -> T {
        try await client.serverStreaming(
            request: ClientRequest(message: request), descriptor: method, serializer: ProtobufSerializer<Request>(),
            deserializer: ProtobufDeserializer<Response>(), options: .defaults
        ) { try await body($0.messages) }
    }

    func clientStreaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ produce: @Sendable @escaping (RPCWriter<Request>) async throws -> Void
    ) async throws -> Response {
        try await client.clientStreaming(
            request: StreamingClientRequest(producer: produce), descriptor: method,
            serializer: ProtobufSerializer<Request>(), deserializer: ProtobufDeserializer<Response>(),
            options: .defaults
        ) { try $0.message }
    }
}

extension DaemonClient {
    /// Makes the unary call `method` with `request`.
    nonisolated(nonsending) func unary<Method: UnaryMethod>(_ method: Method.Type, _ request: Method.Input) async throws
        -> Method.Output
    {
        try await caller.unary(Method.descriptor, request)
    }

    /// Makes the fetch call `method` with `request`, handing its responses to `body`; with
    /// `store`, every URI must be one of that store's.
    func fetch<Method: ServerStreamingMethod, T: Sendable>(
        _ method: Method.Type, _ request: Method.Input, store: UUID? = nil,
        _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T
    where Method.Output == Modeld_V1_FetchResponse {
        try await caller.fetch(Method.descriptor, request, store: store, body)
    }

    /// Makes the fetch call `method` with `request` and returns its whole result, for a fetch
    /// whose answer is bounded (``FetchCollector/isBounded(_:)``).
    nonisolated(nonsending) func fetchWhole<Method: ServerStreamingMethod>(
        _ method: Method.Type, _ request: Method.Input, store: UUID?, resultType: FetchDescriptor.ResultType
    ) async throws -> FetchResult
    where Method.Output == Modeld_V1_FetchResponse {
        try await caller.fetchWhole(Method.descriptor, request, store: store, resultType: resultType)
    }

    /// Makes the `GetObjects` call `method` with `request`, reading its objects; with `store`,
    /// every URI must be one of that store's.
    nonisolated(nonsending) func objects<Method: UnaryMethod>(
        _ method: Method.Type, _ request: Method.Input, store: UUID? = nil
    ) async throws
        -> [ObjectSnapshot]
    where Method.Output == Modeld_V1_GetObjectsResponse {
        try await caller.objects(Method.descriptor, request, store: store)
    }

    /// Makes the server-streaming call `method` with `request`, handing its responses to `body`.
    func serverStreaming<Method: ServerStreamingMethod, T: Sendable>(
        _ method: Method.Type, _ request: Method.Input,
        _ body: @Sendable @escaping (RPCAsyncSequence<Method.Output, any Error>) async throws -> T
    ) async throws -> T {
        try await caller.serverStreaming(Method.descriptor, request, body)
    }
}
