import FramedTransport
import Foundation
import GRPCCore
import ModelCore
import ModelEngine
import ModelWire

/// modeld.v1.QueryService: reads and writes without a session, each call its own unit of work.
struct QueryServiceHandler: Modeld_V1_QueryService.SimpleServiceProtocol {
    let core: DaemonCore

    func fetch(
        request: Modeld_V1_StoreFetchRequest, response: RPCWriter<Modeld_V1_FetchResponse>, context: ServerContext
    ) async throws {
        try await fetch(request, to: .messages(response))
    }

    /// Fetch, its responses sent to `response` (messages for GRPCCore, bytes for a direct call).
    func fetch(_ request: Modeld_V1_StoreFetchRequest, to response: FetchResponseSink) async throws {
        try await core.rpc.handle("Fetch") {
            let store = try core.store(request.store, for: .read)
            let descriptor = try FetchDescriptor(wire: request.fetch)
            let streaming = try FetchStreaming(
                requested: request.fetch.batchSize, maximumMessageSize: core.configuration.maximumMessageSize)
            try await core.rpc.cancellable {
                // A fetch bigger than a batch is read as it is sent; a smaller one in one go,
                // which saves the hand-offs between the reader and the sender.
                if descriptor.resultType == .objects, (descriptor.limit ?? .max) > streaming.batchSize {
                    try await core.streams.run(.streamedFetch, store: store.name) { progress in
                        try await streaming.stream(
                            descriptor, from: store.container.backend, to: response, progress: progress)
                    }
                } else {
                    try await streaming.send(
                        try await store.container.backend.fetch(descriptor), to: response,
                        streams: core.streams, store: store.name)
                }
            }
        }
    }

    /// Fetch answered at once on the thread that read it, in one response, when the result
    /// takes one (a count, or at most a batch less one, without prefetching) and the store reads
    /// it without waiting and within a short budget
    /// (``StorageBackend/fetchWithoutWaiting(_:)``); nil, with nothing kept, otherwise, and
    /// the call runs as ``fetch(_:to:)``, with the same checks, errors and answer.
    func fetchAtOnce(serialized bytes: [UInt8], caller: PeerCredentials?) throws -> [UInt8]? {
        try core.rpc.handleAtOnce(core.rpc.answeredAtOnce.fetch, caller: caller) { () throws -> [UInt8]? in
            let request = try FetchRequestReading(bytes)
            let store = try core.store(request.store, for: .read)
            let descriptor = try request.descriptor()
            let streaming = try FetchStreaming(
                requested: request.batchSize, maximumMessageSize: core.configuration.maximumMessageSize)
            guard descriptor.relationshipKeyPathsForPrefetching.isEmpty,
                descriptor.resultType == .count || (descriptor.limit ?? .max) < streaming.batchSize
            else { return nil }
            let backend = store.container.backend
            guard descriptor.resultType == .objects else {
                return try backend.fetchWithoutWaiting(descriptor).flatMap(streaming.oneResponse)
            }
            // A limit below the batch size is what makes the fetch one answer (above).
            var sink = streaming.oneResponseSink(expectedObjects: descriptor.limit ?? 1)
            guard try backend.fetchWithoutWaiting(descriptor, into: &sink) != nil else { return nil }
            return sink.finish()
        }
    }

    /// Count answered at once, as ``fetchAtOnce(serialized:caller:)`` answers a fetch: nil,
    /// with nothing kept, when the store would wait or the count runs past the short budget.
    func countAtOnce(serialized bytes: [UInt8], caller: PeerCredentials?) throws -> [UInt8]? {
        try core.rpc.handleAtOnce(core.rpc.answeredAtOnce.count, caller: caller) { () throws -> [UInt8]? in
            let request = try FetchRequestReading(bytes)
            var descriptor = try request.descriptor()
            descriptor.resultType = .count
            let backend = try core.store(request.store, for: .read).container.backend
            guard let result = try backend.fetchWithoutWaiting(descriptor) else { return nil }
            return try Modeld_V1_CountResponse.with { $0.count = Int64(result.count) }.serializedBytes()
        }
    }

    func count(request: Modeld_V1_StoreFetchRequest, context: ServerContext) async throws -> Modeld_V1_CountResponse {
        try await core.rpc.handleCancellable("Count") {
            var descriptor = try FetchDescriptor(wire: request.fetch)
            descriptor.resultType = .count
            let count = try await core.store(request.store, for: .read).container.backend.fetch(descriptor).count
            return Modeld_V1_CountResponse.with { $0.count = Int64(count) }
        }
    }

    func aggregate(request: Modeld_V1_StoreAggregateRequest, context: ServerContext) async throws
        -> Modeld_V1_AggregateResponse
    {
        try await core.rpc.handleCancellable("Aggregate") {
            let descriptor = try AggregateDescriptor(wire: request.aggregate)
            return Modeld_V1_AggregateResponse(
                try await core.store(request.store, for: .read).container.backend.aggregate(descriptor))
        }
    }

    func getObjects(request: Modeld_V1_GetObjectsRequest, context: ServerContext) async throws
        -> Modeld_V1_GetObjectsResponse
    {
        let objects = try await objects(request: request, context: context)
        return Modeld_V1_GetObjectsResponse.with { $0.objects = objects.map(\.wire) }
    }

    /// What `GetObjects` answers, before it is a message (a direct call writes the bytes itself).
    func objects(request: Modeld_V1_GetObjectsRequest, context: ServerContext) async throws -> [ObjectSnapshot] {
        try await core.rpc.handleCancellable("GetObjects") {
            let store = try core.store(request.store, for: .read)
            let ids = try request.uris.map { try PersistentIdentifier(wire: $0, in: store.storeIdentifier) }
            return try await store.container.backend.snapshots(for: ids)
        }
    }

    /// `GetObjects` answered at once on the thread that read it, when the store reads without
    /// waiting (``StorageBackend/objectsWithoutWaiting(for:into:)``); nil, with nothing done,
    /// otherwise, and the call runs as ``objects(request:context:)``. The same checks, errors and
    /// answer.
    func objectsAtOnce(serialized bytes: [UInt8], caller: PeerCredentials?) throws -> [UInt8]? {
        try core.rpc.handleAtOnce(core.rpc.answeredAtOnce.getObjects, caller: caller) { () throws -> [UInt8]? in
            let store: StoreHandle, ids: [PersistentIdentifier]
            if let request = GetObjectsRequestFields(serialized: bytes) {
                store = try core.store(request.store, for: .read)
                ids = try store.lastURIPrefix.withLock { prefix throws(ModelError) in
                    try request.identifiers(in: store.storeIdentifier, prefix: &prefix)
                }
            } else {
                let request = try ErrorMetadata.request(Modeld_V1_GetObjectsRequest.self, from: bytes)
                store = try core.store(request.store, for: .read)
                ids = try request.uris.map { try PersistentIdentifier(wire: $0, in: store.storeIdentifier) }
            }
            var encoder = FetchResponseEncoder()
            guard try store.container.backend.objectsWithoutWaiting(for: ids, into: &encoder) else { return nil }
            return encoder.finish()
        }
    }

    func history(
        request: Modeld_V1_HistoryRequest, response: RPCWriter<Modeld_V1_HistoryResponse>, context: ServerContext
    ) async throws {
        try await core.rpc.handle("History") {
            let store = try core.store(request.store, for: .read)
            guard request.limit >= 0 else { throw ModelError(.invalidArgument, "limit \(request.limit) is negative") }
            guard !request.hasAfter || request.after >= 0 else {
                throw ModelError(
                    .invalidArgument,
                    "after \(request.after) is not a history token: tokens count from 1 (0, or no token, reads from the start)"
                )
            }
            let streaming = HistoryStreaming(
                store: store, request: request,
                byteBudget: FetchStreaming.budget(maximumMessageSize: core.configuration.maximumMessageSize),
                stillReads: { [core] in try core.checkAccess(.read, to: store.name) })
            // A history can be long; it is not read on a direct call's event loop.
            try await core.rpc.cancellable {
                try await core.streams.run(.history, store: store.name) { _ in
                    try await FetchStreaming.offEventLoop { try await streaming.run(writer: response) }
                }
            }
        }
    }

    /// The service protocol's `Apply`, for a message already decoded. The daemon serves
    /// ``QueryService``'s instead, which takes the request's bytes (``apply(serialized:)``);
    /// this one answers the same.
    func apply(request: Modeld_V1_ApplyRequest, context: ServerContext) async throws -> Modeld_V1_SaveResult {
        try Modeld_V1_SaveResult(serializedBytes: try await apply(serialized: try request.serializedBytes()))
    }

    /// ``apply(request:context:)``'s answer before it becomes a message.
    func applyResponse(_ request: Modeld_V1_ApplyRequest) async throws -> SaveResponse {
        try await apply(
            store: request.store, author: request.author, uniquenessPolicy: request.uniquenessPolicy,
            returnTransaction: request.returnTransaction, answerRuns: request.answerRuns
        ) { store throws(ModelError) in
            try ObjectEdit.edits(wire: request.changes, in: store)
        }
    }

    /// `Apply` from its request's bytes to its answer's (``QueryService``, over HTTP/2). gRPC
    /// handlers run on the event loop that read their call (LoopLocalExecutor): a large request
    /// (a bulk load, say) is saved on Swift's shared threads instead, so that it does not hold up
    /// the loop's other connections, as the framed transport does with requests over 16 KiB.
    func apply(serialized bytes: [UInt8]) async throws -> [UInt8] {
        guard bytes.count <= Self.bytesOnEventLoop else {
            return try await withTaskExecutorPreference(globalConcurrentExecutor) {
                try await applyResponse(serialized: bytes).serializedBytes()
            }
        }
        return try await applyResponse(serialized: bytes).serializedBytes()
    }

    /// The largest `Apply` request, in bytes, saved on the event loop that read it (the framed
    /// transport's limit for every request).
    static let bytesOnEventLoop = 16 * 1024

    /// The answer to `Apply` of the request `bytes`: one in the plain form read by hand
    /// (``ApplyRequestFields``), any other by SwiftProtobuf, with the errors GRPCCore gives for a
    /// request that does not decode.
    nonisolated(nonsending) func applyResponse(serialized bytes: [UInt8]) async throws -> SaveResponse {
        if let request = ApplyRequestFields(serialized: bytes) {
            return try await apply(request)
        }
        return try await applyDecoding(bytes)
    }

    /// `Apply` of a request read by SwiftProtobuf: a function of its own, so that a plain request,
    /// the usual one, does not carry the message in its call's frame (each async call's frame
    /// comes from its task's allocator; see DaemonCore.response).
    @inline(never)
    private nonisolated(nonsending) func applyDecoding(_ bytes: [UInt8]) async throws -> SaveResponse {
        try await applyResponse(try ErrorMetadata.request(Modeld_V1_ApplyRequest.self, from: bytes))
    }

    /// ``apply(request:context:)`` for a request the framed transport read itself.
    nonisolated(nonsending) func apply(_ request: ApplyRequestFields) async throws -> SaveResponse {
        try await apply(
            store: request.store, author: request.author, uniquenessPolicy: request.uniquenessPolicy,
            returnTransaction: request.returnTransaction, answerRuns: request.answerRuns,
            insertRuns: request.insertRuns,
            edits: request.edits(in:))
    }

    private nonisolated(nonsending) func apply(
        store name: String, author: String, uniquenessPolicy: Modeld_V1_UniquenessPolicy, returnTransaction: Bool,
        answerRuns: Bool, insertRuns: [InsertRun]? = nil, edits: @Sendable (UUID) throws(ModelError) -> [ObjectEdit]
    ) async throws -> SaveResponse {
        try await core.rpc.handleCancellable("Apply") {
            let store = try core.store(name, for: .write)
            do {
                let author = author.isEmpty ? nil : author
                // Plain inserts alone are saved from their runs, without an edit per object (runs name
                // no URIs, so their edits could not have failed before the policy is read).
                if let insertRuns,
                    let result = try await store.container.saveInsertRuns(
                        insertRuns, author: author, uniquenessPolicy: try UniquenessPolicy(wire: uniquenessPolicy))
                {
                    // Answered without another async call unless the transaction is asked for: each
                    // call's frame comes from the task's allocator (see DaemonCore.response).
                    var response =
                        returnTransaction
                        ? try await core.response(to: result, store: store, returnTransaction: true)
                        : core.announced(result, store: store)
                    response.answersRuns = answerRuns
                    return response
                }
                return try await applyEdits(
                    try edits(store.storeIdentifier), to: store, author: author,
                    uniquenessPolicy: try UniquenessPolicy(wire: uniquenessPolicy), returnTransaction: returnTransaction
                )
            } catch let error as ModelError where error.namesWhatTheSchemaLacks {
                // Named what the served schema lacks: another process may have migrated the store.
                throw await core.migratedElsewhere(store) ?? error
            }
        }
    }

    /// `Apply`'s edits saved to `store`: inserts alone without a context (and its actor), other
    /// edits through one. A function of its own, so that a save of insert runs, the usual one,
    /// does not carry this path's values in its frame.
    @inline(never)
    private nonisolated(nonsending) func applyEdits(
        _ edits: [ObjectEdit], to store: StoreHandle, author: String?, uniquenessPolicy policy: UniquenessPolicy,
        returnTransaction: Bool
    ) async throws -> SaveResponse {
        if let result = try await store.container.saveInserts(edits, author: author, uniquenessPolicy: policy) {
            return try await core.response(to: result, store: store, returnTransaction: returnTransaction)
        }
        let unit = store.container.makeContext(author: author, uniquenessPolicy: policy, retainsSavedObjects: false)
        return try await core.save(unit, applying: edits, store: store, returnTransaction: returnTransaction)
    }

    func batchDelete(request: Modeld_V1_BatchDeleteRequest, context: ServerContext) async throws
        -> Modeld_V1_BatchResult
    {
        try await core.rpc.handleCancellable("BatchDelete") {
            let store = try core.store(request.store, for: .write)
            let (matched, result) = try await store.container.batchDelete(
                request.entity, where: try request.predicate.model(),
                author: request.author.isEmpty ? nil : request.author)
            let token = core.announced(result, store: store).result.token
            var deleted = 0
            if let token,
                let transaction = try await store.container.history(after: HistoryToken(token.rawValue - 1), limit: 1)
                    .first
            {
                deleted = transaction.changes.filter { $0.kind == .delete }.count
            }
            return Modeld_V1_BatchResult.with {
                $0.matched = Int64(matched)
                // Cleared on purpose: see batchUpdate.
                if let token { $0.token = token.rawValue } else { $0.clearToken() }
                $0.deleted = Int64(deleted)
            }
        }
    }

    func deleteHistory(request: Modeld_V1_DeleteHistoryRequest, context: ServerContext) async throws
        -> Modeld_V1_DeleteHistoryResponse
    {
        try await core.rpc.handleCancellable("DeleteHistory") {
            let container = try core.store(request.store, for: .manage).container
            if request.through != 0 {
                let deleted = try await container.deleteHistory(through: HistoryToken(request.through))
                return Modeld_V1_DeleteHistoryResponse.with { if let deleted { $0.through = deleted.rawValue } }
            }
            guard request.savedBeforeMicros != 0 else {
                throw ModelError(
                    .invalidArgument, "say which history to delete: a token (through) or a time (saved_before_micros)")
            }
            let newest = try await container.deleteHistory(
                savedBefore: Timestamp(microsecondsSince1970: request.savedBeforeMicros))
            return Modeld_V1_DeleteHistoryResponse.with { if let newest { $0.through = newest.rawValue } }
        }
    }

    func batchUpdate(request: Modeld_V1_BatchUpdateRequest, context: ServerContext) async throws
        -> Modeld_V1_BatchResult
    {
        try await core.rpc.handleCancellable("BatchUpdate") {
            let store = try core.store(request.store, for: .write)
            let (matched, result) = try await store.container.batchUpdate(
                request.entity, where: try request.predicate.model(),
                set: try [String: Value](wire: request.attributes),
                author: request.author.isEmpty ? nil : request.author)
            let token = core.announced(result, store: store).result.token
            return Modeld_V1_BatchResult.with {
                $0.matched = Int64(matched)
                // Cleared when there is no token, though a new message has none: without it,
                // Swift 6.3.1's optimizer dropped the message's initial `token` (release builds
                // answered a batch that changed nothing with whatever the memory held;
                // scripts/interop checks it, and scripts/bench runs that against its release build).
                if let token { $0.token = token.rawValue } else { $0.clearToken() }
            }
        }
    }
}

/// A `StoreFetchRequest` as a call answered at once reads it: by hand in the plain form
/// (``FetchRequestFields``), otherwise with SwiftProtobuf, whose errors the call then gives in
/// the order it always gave them.
private enum FetchRequestReading {
    case plain(FetchRequestFields)
    case message(Modeld_V1_StoreFetchRequest)

    init(_ bytes: [UInt8]) throws {
        if let fields = FetchRequestFields(serialized: bytes) {
            self = .plain(fields)
        } else {
            self = .message(try ErrorMetadata.request(Modeld_V1_StoreFetchRequest.self, from: bytes))
        }
    }

    var store: String {
        switch self {
        case .plain(let fields): fields.store
        case .message(let request): request.store
        }
    }

    var batchSize: Int32 {
        switch self {
        case .plain(let fields): fields.batchSize
        case .message(let request): request.fetch.batchSize
        }
    }

    func descriptor() throws(ModelError) -> FetchDescriptor {
        switch self {
        case .plain(let fields): fields.descriptor
        case .message(let request): try FetchDescriptor(wire: request.fetch)
        }
    }
}
