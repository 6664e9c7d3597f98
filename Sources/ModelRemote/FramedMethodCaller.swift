import Foundation
import FramedTransport
import GRPCCore
import GRPCProtobuf
import ModelCore
import ModelWire
import SwiftProtobuf

/// Calls straight through the framed transport (``FramedClientTransport/unary(_:request:)`` and
/// ``FramedClientTransport/serverStreaming(_:request:_:)``), with GRPCCore's coding (and its
/// errors) for the messages.
struct FramedMethodCaller: MethodCaller {
    let transport: FramedClientTransport
    /// GRPCCore's client on the same transport, for the calls that are not direct (client streaming).
    let general: any MethodCaller
    /// The shapes of the objects last read on the connection, for the next answer's.
    let shapes = SnapshotShapes()
    /// The start of the URIs last named in a `GetObjects` request on the connection, for the next.
    let requestPrefix = RequestURIPrefix()

    func clientStreaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ produce: @Sendable @escaping (RPCWriter<Request>) async throws -> Void
    ) async throws -> Response {
        try await general.clientStreaming(method, produce)
    }

    nonisolated(nonsending) func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request
    ) async throws -> Response {
        let bytes: [UInt8] = try ProtobufSerializer<Request>().serialize(request)
        return try ProtobufDeserializer<Response>().deserialize(try await transport.unary(method, request: bytes))
    }

    /// On a connection of its own: every such call hands its responses to a `body` that may
    /// take them slowly (a history followed, a watch, a backup written to disk), and the
    /// connection stops reading while more than a few MiB wait
    /// (``FramedClientTransport/serverStreamingOnOwnConnection(_:request:_:)``).
    func serverStreaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message, T: Sendable>(
        _ method: MethodDescriptor, _ request: Request,
        _ body: @Sendable @escaping (RPCAsyncSequence<Response, any Error>) async throws -> T
    ) async throws -> T {
        try await stream(
            method, bytes: try ProtobufSerializer<Request>().serialize(request), onOwnConnection: true,
            decode: { try ProtobufDeserializer<Response>().deserialize($0) }, body)
    }

    /// Reads each response's bytes straight into ModelCore's types (``FetchChunk/init(serialized:)``),
    /// without building the messages first.
    func fetch<Request: SwiftProtobuf.Message, T: Sendable>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?,
        _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T {
        try await stream(
            method, request, decode: { [shapes] in try FetchChunk(serialized: $0, in: store, shapes: shapes) }, body)
    }

    /// Writes the request's bytes straight from `call` (``FetchCall/serializedBytes()``), and
    /// reads the answers as ``fetch(_:_:store:_:)`` does.
    func fetch<T: Sendable>(
        _ call: FetchCall, _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T {
        try await stream(
            Modeld_V1_QueryService.Method.Fetch.descriptor, bytes: try call.serializedBytes(),
            decode: { [shapes] in try FetchChunk(serialized: $0, in: nil, shapes: shapes) }, body)
    }

    /// The responses gathered on the connection and read when the call ends
    /// (``FramedClientTransport/gatheredServerStreaming(_:request:)``): no stream of responses,
    /// its task switches and its continuations, for an answer that is usually one response.
    nonisolated(nonsending) func fetchWhole(_ call: FetchCall, resultType: FetchDescriptor.ResultType)
        async throws -> FetchResult
    {
        try await gathered(
            Modeld_V1_QueryService.Method.Fetch.descriptor, bytes: try call.serializedBytes(), store: nil,
            resultType: resultType)
    }

    /// As ``fetchWhole(_:resultType:)``, for any fetch method (a session's).
    nonisolated(nonsending) func fetchWhole<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?, resultType: FetchDescriptor.ResultType
    ) async throws -> FetchResult {
        try await gathered(
            method, bytes: try ProtobufSerializer<Request>().serialize(request), store: store, resultType: resultType)
    }

    private nonisolated(nonsending) func gathered(
        _ method: MethodDescriptor, bytes: [UInt8], store: UUID?, resultType: FetchDescriptor.ResultType
    ) async throws -> FetchResult {
        let responses = try await transport.gatheredServerStreaming(method, request: bytes)
        var collector = FetchCollector()
        for response in responses { collector.add(try FetchChunk(serialized: response, in: store, shapes: shapes)) }
        return collector.result(resultType)
    }

    /// As ``fetch(_:_:)-swift.method``, on a connection of its own that stops reading while more
    /// than a few MiB wait for `body`
    /// (``FramedClientTransport/serverStreamingOnOwnConnection(_:request:_:)``).
    func fetchEachBatch<T: Sendable>(
        _ call: FetchCall, _ body: @Sendable @escaping (RPCAsyncSequence<FetchChunk, any Error>) async throws -> T
    ) async throws -> T {
        try await stream(
            Modeld_V1_QueryService.Method.Fetch.descriptor, bytes: try call.serializedBytes(), onOwnConnection: true,
            decode: { [shapes] in try FetchChunk(serialized: $0, in: nil, shapes: shapes) }, body)
    }

    /// Reads the `GetObjectsResponse` bytes straight into snapshots: they are a `FetchResponse`
    /// with only `objects` (``FetchChunk/init(serialized:)``).
    nonisolated(nonsending) func objects<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?
    )
        async throws -> [ObjectSnapshot]
    {
        let bytes: [UInt8] = try ProtobufSerializer<Request>().serialize(request)
        return try FetchChunk(serialized: try await transport.unary(method, request: bytes), in: store, shapes: shapes)
            .objects
    }

    /// Writes the request's bytes straight from `call` (``GetObjectsCall/serializedBytes(prefix:)``),
    /// and reads the answer's as ``objects(_:_:store:)`` does.
    nonisolated(nonsending) func objects(_ call: GetObjectsCall) async throws -> [ObjectSnapshot] {
        let bytes = try await transport.unary(
            Modeld_V1_QueryService.Method.GetObjects.descriptor, request: requestPrefix.serializedBytes(of: call))
        return try FetchChunk(serialized: bytes, in: nil, shapes: shapes).objects
    }

    /// Reads the `SaveResult` bytes straight into the outcome (``SaveResultFields``).
    nonisolated(nonsending) func save<Request: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, store: UUID?
    ) async throws
        -> SaveOutcome
    {
        let bytes: [UInt8] = try ProtobufSerializer<Request>().serialize(request)
        return SaveOutcome(
            try SaveResultFields(serialized: try await transport.unary(method, request: bytes), in: store))
    }

    /// Writes the request's bytes straight from `call` (``ApplyCall/serializedBytes()``), and
    /// reads the result's as ``save(_:_:store:)`` does.
    nonisolated(nonsending) func apply(_ call: ApplyCall) async throws -> SaveOutcome {
        let bytes = try await transport.unary(
            Modeld_V1_QueryService.Method.Apply.descriptor, request: try call.serializedBytes())
        return SaveOutcome(try SaveResultFields(serialized: bytes, in: nil))
    }

    /// Makes a direct server-streaming call, handing `body` its responses as `decode` reads them.
    private func stream<Request: SwiftProtobuf.Message, Element: Sendable, T>(
        _ method: MethodDescriptor, _ request: Request, decode: @escaping @Sendable ([UInt8]) throws -> Element,
        _ body: (RPCAsyncSequence<Element, any Error>) async throws -> T
    ) async throws -> T {
        try await stream(method, bytes: try ProtobufSerializer<Request>().serialize(request), decode: decode, body)
    }

    /// Makes a direct server-streaming call with a request's bytes, on the client's connection
    /// or on one of its own.
    private func stream<Element: Sendable, T>(
        _ method: MethodDescriptor, bytes: [UInt8], onOwnConnection: Bool = false,
        decode: @escaping @Sendable ([UInt8]) throws -> Element,
        _ body: (RPCAsyncSequence<Element, any Error>) async throws -> T
    ) async throws -> T {
        guard onOwnConnection else {
            return try await transport.serverStreaming(method, request: bytes) { responses in
                try await body(RPCAsyncSequence(wrapping: DecodingSequence(base: responses, decode: decode)))
            }
        }
        return try await transport.serverStreamingOnOwnConnection(method, request: bytes) { responses in
            try await body(RPCAsyncSequence(wrapping: DecodingSequence(base: responses, decode: decode)))
        }
    }
}

/// A stream of responses, each turned into what the caller reads.
struct DecodingSequence<Base: AsyncSequence & Sendable, Element: Sendable>: AsyncSequence, Sendable {
    let base: Base
    let decode: @Sendable (Base.Element) throws -> Element

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), decode: decode)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let decode: @Sendable (Base.Element) throws -> Element

        mutating func next() async throws -> Element? {
            guard let element = try await base.next() else { return nil }
            return try decode(element)
        }
    }
}
