import Foundation
import ModelCore
import ModelWire

/// A session on a store in the daemon: a unit of work of its own, as a SwiftData context is.
/// Nobody else sees its changes until ``save(returnTransaction:)``; its fetches include them.
/// Close it when done (the daemon also closes it after its idle timeout).
public final class RemoteSession: Sendable {
    public let id: String
    /// The store's name.
    public let store: String
    /// The store's UUID, the host part of its URIs.
    public let storeIdentifier: UUID
    /// How long the daemon keeps the session without a call.
    public let idleTimeout: Duration
    let client: DaemonClient

    init(id: String, store: String, storeIdentifier: UUID, idleTimeout: Duration, client: DaemonClient) {
        self.id = id
        self.store = store
        self.storeIdentifier = storeIdentifier
        self.idleTimeout = idleTimeout
        self.client = client
    }

    /// Makes edits, in order, all or none; returns one identifier per edit (the new object's
    /// temporary identifier for inserts).
    @discardableResult
    public func stage(_ edits: [ObjectEdit]) async throws -> [PersistentIdentifier] {
        try await client.call {
            let response = try await client.unary(
                Modeld_V1_SessionService.Method.Stage.self,
                Modeld_V1_StageRequest.with {
                    $0.sessionID = id
                    $0.changes = edits.map(\.wire)
                })
            return try response.uris.map { uri throws(ModelError) in
                try PersistentIdentifier(wire: uri, in: storeIdentifier)
            }
        }
    }

    /// Inserts an object; returns its temporary identifier.
    public func insert(
        _ entity: String, attributes: [String: Value] = [:], relationships: [String: RelationshipValue] = [:]
    ) async throws -> PersistentIdentifier {
        try await stage([.insert(entity: entity, attributes: attributes, relationships: relationships, id: nil)])[0]
    }

    /// Changes attributes and relationships of an object.
    public func update(
        _ id: PersistentIdentifier, attributes: [String: Value] = [:], relationships: [String: RelationshipValue] = [:]
    ) async throws {
        try await stage([.update(id, attributes: attributes, relationships: relationships)])
    }

    /// Deletes an object; delete rules run at save.
    public func delete(_ id: PersistentIdentifier) async throws {
        try await stage([.delete(id)])
    }

    /// Saves every staged change atomically and durably; with `edits`, stages them first in the
    /// same call (one round trip), all or none: if an edit or the save fails, the session is left
    /// as it was before the call.
    @discardableResult
    public func save(applying edits: [ObjectEdit] = [], returnTransaction: Bool = false) async throws -> SaveOutcome {
        try await client.call {
            try await client.caller.save(
                Modeld_V1_SessionService.Method.Save.descriptor,
                Modeld_V1_SaveRequest.with {
                    $0.sessionID = id
                    $0.returnTransaction = returnTransaction
                    $0.changes = edits.map(\.wire)
                }, store: storeIdentifier)
        }
    }

    /// Discards every staged change; returns how many objects had changes.
    @discardableResult
    public func rollback() async throws -> Int {
        try await client.call {
            Int(
                try await client.unary(
                    Modeld_V1_SessionService.Method.Rollback.self, Modeld_V1_RollbackRequest.with { $0.sessionID = id }
                ).discardedChanges)
        }
    }

    /// Fetches as if the staged changes were saved.
    public func fetch(_ descriptor: FetchDescriptor) async throws -> FetchResult {
        try await client.call {
            let request = Modeld_V1_SessionFetchRequest.with {
                $0.sessionID = id
                $0.fetch = descriptor.wire
            }
            // Gathered whole when bounded, as ``DaemonClient/fetch(_:in:)`` does.
            if FetchCollector.isBounded(descriptor) {
                return try await client.fetchWhole(
                    Modeld_V1_SessionService.Method.Fetch.self, request, store: storeIdentifier,
                    resultType: descriptor.resultType)
            }
            return try await client.fetch(Modeld_V1_SessionService.Method.Fetch.self, request, store: storeIdentifier) {
                try await FetchCollector.collect($0, resultType: descriptor.resultType)
            }
        }
    }

    /// Counts as if the staged changes were saved.
    public func count(_ descriptor: FetchDescriptor) async throws -> Int {
        try await client.call {
            Int(
                try await client.unary(
                    Modeld_V1_SessionService.Method.Count.self,
                    Modeld_V1_SessionFetchRequest.with {
                        $0.sessionID = id
                        $0.fetch = descriptor.wire
                    }
                ).count)
        }
    }

    /// Grouped aggregates as if the staged changes were saved.
    public func aggregate(_ descriptor: AggregateDescriptor) async throws -> [AggregateRow] {
        try await client.call {
            try await client.aggregate(
                Modeld_V1_SessionService.Method.Aggregate.self,
                Modeld_V1_SessionAggregateRequest.with {
                    $0.sessionID = id
                    $0.aggregate = descriptor.wire
                })
        }
    }

    /// Objects as this session sees them; missing and deleted ones are left out.
    public func objects(_ ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        try await client.call {
            try await client.objects(
                Modeld_V1_SessionService.Method.GetObjects.self,
                Modeld_V1_SessionGetObjectsRequest.with {
                    $0.sessionID = id
                    $0.uris = ids.map(\.uriRepresentation)
                }, store: storeIdentifier)
        }
    }

    /// One object as this session sees it.
    public func object(_ id: PersistentIdentifier) async throws -> ObjectSnapshot? {
        try await objects([id]).first
    }

    /// The session's unsaved changes.
    public func describe() async throws -> SessionDescription {
        try await client.call {
            let info = try await client.unary(
                Modeld_V1_SessionService.Method.DescribeSession.self,
                Modeld_V1_DescribeSessionRequest.with { $0.sessionID = id })
            func ids(_ uris: [String]) throws(ModelError) -> [PersistentIdentifier] {
                try uris.map { uri throws(ModelError) in try PersistentIdentifier(wire: uri, in: storeIdentifier) }
            }
            return SessionDescription(
                id: info.sessionID, store: info.store, author: info.author.isEmpty ? nil : info.author,
                hasChanges: info.unsavedChanges, inserted: try ids(info.inserted),
                updated: try ids(info.updated), deleted: try ids(info.deleted))
        }
    }

    /// Closes the session, discarding what it did not save; returns how many objects had changes.
    @discardableResult
    public func close() async throws -> Int {
        try await client.call(small: true) {
            Int(
                try await client.unary(
                    Modeld_V1_SessionService.Method.CloseSession.self,
                    Modeld_V1_CloseSessionRequest.with { $0.sessionID = id }
                ).discardedChanges)
        }
    }
}

extension DaemonClient {
    /// Opens a session on `store`.
    public func openSession(
        on store: String, author: String? = nil, mergePolicy: MergePolicy = .error,
        uniquenessPolicy: UniquenessPolicy = .error
    ) async throws -> RemoteSession {
        try await call(small: true) {
            let response = try await unary(
                Modeld_V1_SessionService.Method.OpenSession.self,
                Modeld_V1_OpenSessionRequest.with {
                    $0.store = store
                    $0.author = author ?? ""
                    $0.mergePolicy = mergePolicy.wire
                    $0.uniquenessPolicy = uniquenessPolicy.wire
                })
            guard let uuid = UUID(uuidString: response.storeUuid) else {
                throw ModelError(.storageFailure, "the daemon sent a bad store UUID '\(response.storeUuid)'")
            }
            return RemoteSession(
                id: response.sessionID, store: store, storeIdentifier: uuid,
                idleTimeout: .seconds(response.idleTimeoutSeconds), client: self)
        }
    }
}
