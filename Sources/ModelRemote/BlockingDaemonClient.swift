import Foundation
import FramedTransport
import GRPCCore
import ModelCore
import ModelWire
import SwiftProtobuf

/// modeld's client for code that does not use Swift concurrency, as libpq's `PQexec` serves C: a
/// command-line tool, a server with a thread per connection, a tight loop of small calls. Each
/// call blocks its thread until the daemon answers, over the framed transport, with no event
/// loop and no task between (``BlockingFramedConnection``): a point read costs this client about
/// a third of the instructions it costs ``DaemonClient``.
///
/// One call at a time: a client per thread (it is not `Sendable`). The calls, their answers and
/// their errors (``ModelError``s) are ``DaemonClient``'s. A call running longer than ``timeout``
/// is cancelled and fails with `deadlineExceeded`; the client stays usable.
public final class BlockingDaemonClient {
    public let socketPath: String
    /// How long each call may take; nil: as long as it takes.
    public var timeout: Duration?
    private let connection: BlockingFramedConnection
    /// The start of the URIs last named in a `GetObjects` request, for the next.
    private var requestPrefix: PersistentIdentifier.URIPrefix?
    /// The shapes of the objects last read, for the next answer's (as ``DaemonClient`` keeps
    /// them per connection): a point read of the same entity fills a copy of the last object's
    /// table of names rather than hashing each name into a new one.
    private let shapes = SnapshotShapes()

    /// Connects to the daemon whose socket is `socketPath`, on the framed socket beside it.
    public init(socketPath: String, timeout: Duration? = nil) throws(ModelError) {
        try DaemonClient.checkTrusted(socketPath)
        guard let framed = DefaultLocations.framedSocketPath(for: socketPath) else {
            throw ModelError(
                .invalidArgument, "the framed socket beside \(socketPath) would be longer than 107 bytes")
        }
        self.socketPath = socketPath
        self.timeout = timeout
        do {
            connection = try BlockingFramedConnection(
                path: framed, maximumResponseSize: DaemonClient.maximumResponseSize)
        } catch {
            throw DaemonClient.translate(error, socketPath: socketPath, small: true)
        }
    }

    /// Closes the connection; calls after it fail with `unavailable`.
    public func close() {
        connection.close()
    }

    /// The daemon's version, uptime and counts (`DaemonService/Status`).
    public func status() throws(ModelError) -> DaemonStatus {
        DaemonStatus(
            wire: try decode(unary(Modeld_V1_DaemonService.Method.Status.descriptor, Modeld_V1_StatusRequest())))
    }

    /// The objects `ids` name, in their order, those that exist (`QueryService/GetObjects`).
    public func objects(_ ids: [PersistentIdentifier], in store: String) throws(ModelError) -> [ObjectSnapshot] {
        let request = GetObjectsCall(store: store, ids: ids).serializedBytes(prefix: &requestPrefix)
        // Read where the answer lies in the connection's buffer, not copied out first.
        var chunk: Result<FetchChunk, ModelError> = .success(FetchChunk())
        let shapes = shapes
        try call { () throws(RPCError) in
            try connection.unary(
                Modeld_V1_QueryService.Method.GetObjects.descriptor, request: request, timeout: timeout
            ) { bytes in chunk = Result { () throws(ModelError) in try FetchChunk(serialized: bytes, shapes: shapes) } }
        }
        return try chunk.get().objects
    }

    /// A fetch from a store, every batch gathered (`QueryService/Fetch`).
    public func fetch(_ descriptor: FetchDescriptor, in store: String) throws(ModelError) -> FetchResult {
        let request = Modeld_V1_StoreFetchRequest.with {
            $0.store = store
            $0.fetch = descriptor.wire
        }
        let bytes = try serialized(request)
        var collector = FetchCollector()
        for message in try call({ () throws(RPCError) in
            try connection.serverStreaming(
                Modeld_V1_QueryService.Method.Fetch.descriptor, request: bytes, timeout: timeout)
        }) {
            collector.add(try FetchChunk(serialized: message, shapes: shapes))
        }
        return collector.result(descriptor.resultType)
    }

    /// Saves `edits` as one transaction (`QueryService/Apply`), as ``DaemonClient`` does.
    public func apply(
        _ edits: [ObjectEdit], in store: String, author: String? = nil, uniquenessPolicy: UniquenessPolicy = .error,
        returnTransaction: Bool = false
    ) throws(ModelError) -> SaveOutcome {
        let call = ApplyCall(
            store: store, author: author, uniquenessPolicy: uniquenessPolicy, edits: edits,
            returnTransaction: returnTransaction)
        let request: [UInt8]
        do {
            request = try call.serializedBytes()
        } catch {
            throw ModelError(.invalidArgument, "the request does not encode: \(error)")
        }
        let answer = try unary(Modeld_V1_QueryService.Method.Apply.descriptor, bytes: request)
        return SaveOutcome(try SaveResultFields(serialized: answer, in: nil))
    }

    // MARK: Calls

    private func unary(_ method: MethodDescriptor, _ request: some SwiftProtobuf.Message) throws(ModelError) -> [UInt8]
    {
        try unary(method, bytes: serialized(request))
    }

    /// A unary call of `method` with a request already written: its answer's bytes.
    private func unary(_ method: MethodDescriptor, bytes: [UInt8]) throws(ModelError) -> [UInt8] {
        try call { () throws(RPCError) in try connection.unary(method, request: bytes, timeout: timeout) }
    }

    private func call<T>(_ body: () throws(RPCError) -> T) throws(ModelError) -> T {
        do {
            return try body()
        } catch {
            throw DaemonClient.translate(error, socketPath: socketPath, small: true)
        }
    }

    private func serialized(_ message: some SwiftProtobuf.Message) throws(ModelError) -> [UInt8] {
        do {
            return try message.serializedBytes()
        } catch {
            throw ModelError(.invalidArgument, "the request does not encode: \(error)")
        }
    }

    private func decode<Message: SwiftProtobuf.Message>(_ bytes: [UInt8]) throws(ModelError) -> Message {
        do {
            return try Message(serializedBytes: bytes)
        } catch {
            throw ModelError(.invalidArgument, "a malformed response from modeld: \(error)")
        }
    }
}
