import Foundation
import GRPCCore
import ModelCore
import ModelEngine
import ModelWire

/// modeld.v1.SessionService: each client's own unit of work.
struct SessionServiceHandler: Modeld_V1_SessionService.SimpleServiceProtocol {
    let core: DaemonCore

    func openSession(request: Modeld_V1_OpenSessionRequest, context: ServerContext) async throws
        -> Modeld_V1_OpenSessionResponse
    {
        try await core.rpc.handle("OpenSession") {
            let store = try core.store(request.store, for: .read)
            let session = try core.sessions.open(
                on: store, author: request.author.isEmpty ? nil : request.author,
                mergePolicy: try MergePolicy(wire: request.mergePolicy),
                uniquenessPolicy: try UniquenessPolicy(wire: request.uniquenessPolicy))
            return Modeld_V1_OpenSessionResponse.with {
                $0.sessionID = session.id
                $0.storeUuid = store.storeIdentifier.uuidString.lowercased()
                $0.idleTimeoutSeconds = core.configuration.idleTimeout.components.seconds
            }
        }
    }

    func closeSession(request: Modeld_V1_CloseSessionRequest, context: ServerContext) async throws
        -> Modeld_V1_CloseSessionResponse
    {
        try await core.rpc.handle("CloseSession") {
            _ = try core.session(request.sessionID, mustRead: false)
            let discarded = await core.sessions.end(request.sessionID, reason: "was closed by its client") ?? 0
            return Modeld_V1_CloseSessionResponse.with { $0.discardedChanges = Int64(discarded) }
        }
    }

    func stage(request: Modeld_V1_StageRequest, context: ServerContext) async throws -> Modeld_V1_StageResponse {
        try await core.rpc.handleCancellable("Stage") {
            let session = try core.session(request.sessionID)
            do {
                let edits = try ObjectEdit.edits(wire: request.changes, in: session.store.storeIdentifier)
                let ids = try await session.run { try await $0.apply(edits) }
                return Modeld_V1_StageResponse.with { $0.uris = ids.map(\.uriRepresentation) }
            } catch let error as ModelError where session.migration == nil && error.namesWhatTheSchemaLacks {
                throw await core.migratedElsewhere(session.store) ?? error
            }
        }
    }

    func save(request: Modeld_V1_SaveRequest, context: ServerContext) async throws -> Modeld_V1_SaveResult {
        try await saveResponse(request).wire
    }

    /// ``save(request:context:)``'s answer before it becomes a message.
    func saveResponse(_ request: Modeld_V1_SaveRequest) async throws -> SaveResponse {
        try await core.rpc.handleCancellable("Save") {
            let session = try core.session(request.sessionID)
            try core.checkAccess(.write, to: session.store.name)
            do {
                let edits = try ObjectEdit.edits(wire: request.changes, in: session.store.storeIdentifier)
                return try await session.run { context in
                    // A migration's saves are committed with it: the store's watches and followers
                    // hear of them then (a watch told now would read the store without them, and
                    // take their token as heard).
                    if session.migration != nil { return SaveResponse(try await context.save(applying: edits)) }
                    return try await core.save(
                        context, applying: edits, store: session.store, returnTransaction: request.returnTransaction)
                }
            } catch let error as ModelError where session.migration == nil && error.namesWhatTheSchemaLacks {
                throw await core.migratedElsewhere(session.store) ?? error
            }
        }
    }

    func rollback(request: Modeld_V1_RollbackRequest, context: ServerContext) async throws -> Modeld_V1_RollbackResponse
    {
        try await core.rpc.handle("Rollback") {
            let session = try core.session(request.sessionID)
            let discarded = try await session.run { await $0.rollback() }
            return Modeld_V1_RollbackResponse.with { $0.discardedChanges = Int64(discarded) }
        }
    }

    func fetch(
        request: Modeld_V1_SessionFetchRequest, response: RPCWriter<Modeld_V1_FetchResponse>, context: ServerContext
    ) async throws {
        try await fetch(request, to: .messages(response))
    }

    /// Fetch, its responses sent to `response` (messages for GRPCCore, bytes for a direct call).
    func fetch(_ request: Modeld_V1_SessionFetchRequest, to response: FetchResponseSink) async throws {
        try await core.rpc.handle("Fetch") {
            let session = try core.session(request.sessionID)
            let descriptor = try FetchDescriptor(wire: request.fetch)
            let streaming = try FetchStreaming(
                requested: request.fetch.batchSize, maximumMessageSize: core.configuration.maximumMessageSize)
            try await core.rpc.cancellable {
                let result = try await session.run { try await $0.fetch(descriptor) }
                try await streaming.send(result, to: response, streams: core.streams, store: session.store.name)
            }
        }
    }

    func count(request: Modeld_V1_SessionFetchRequest, context: ServerContext) async throws -> Modeld_V1_CountResponse {
        try await core.rpc.handleCancellable("Count") {
            let session = try core.session(request.sessionID)
            let descriptor = try FetchDescriptor(wire: request.fetch)
            let count = try await session.run { try await $0.count(descriptor) }
            return Modeld_V1_CountResponse.with { $0.count = Int64(count) }
        }
    }

    func aggregate(request: Modeld_V1_SessionAggregateRequest, context: ServerContext) async throws
        -> Modeld_V1_AggregateResponse
    {
        try await core.rpc.handleCancellable("Aggregate") {
            let session = try core.session(request.sessionID)
            let descriptor = try AggregateDescriptor(wire: request.aggregate)
            let rows = try await session.run { try await $0.aggregate(descriptor) }
            return Modeld_V1_AggregateResponse(rows)
        }
    }

    func getObjects(request: Modeld_V1_SessionGetObjectsRequest, context: ServerContext) async throws
        -> Modeld_V1_GetObjectsResponse
    {
        let objects = try await objects(request: request, context: context)
        return Modeld_V1_GetObjectsResponse.with { $0.objects = objects.map(\.wire) }
    }

    /// What `GetObjects` answers, before it is a message (a direct call writes the bytes itself).
    func objects(request: Modeld_V1_SessionGetObjectsRequest, context: ServerContext) async throws -> [ObjectSnapshot] {
        try await core.rpc.handleCancellable("GetObjects") {
            let session = try core.session(request.sessionID)
            var ids: [PersistentIdentifier] = []
            for uri in request.uris {
                ids.append(try PersistentIdentifier(wire: uri, in: session.store.storeIdentifier))
            }
            return try await session.run { try await $0.objects(for: ids) }
        }
    }

    func describeSession(request: Modeld_V1_DescribeSessionRequest, context: ServerContext) async throws
        -> Modeld_V1_SessionInfo
    {
        try await core.rpc.handle("DescribeSession") {
            let session = try core.session(request.sessionID)
            return try await session.run { context in
                let pending = await context.pendingObjects
                return Modeld_V1_SessionInfo.with {
                    $0.sessionID = session.id
                    $0.store = session.store.name
                    $0.author = context.author ?? ""
                    $0.unsavedChanges =
                        !(pending.inserted.isEmpty && pending.updated.isEmpty && pending.deleted.isEmpty)
                    $0.inserted = pending.inserted.map(\.uriRepresentation)
                    $0.updated = pending.updated.map(\.uriRepresentation)
                    $0.deleted = pending.deleted.map(\.uriRepresentation)
                }
            }
        }
    }
}

extension Modeld_V1_AggregateResponse {
    init(_ rows: [AggregateRow]) {
        self.init()
        self.rows = rows.map { row in Modeld_V1_AggregateRow.with { $0.values = row.wire } }
    }
}
