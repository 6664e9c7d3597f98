import Foundation
import ModelCore
import ModelWire

/// A staged migration on the daemon (BeginMigration): a session whose calls run inside one
/// transaction of its store, stepped from schema to schema (``step(to:allowDataLoss:dryRun:)``),
/// then committed (``commit()``) as one unit. Closing it — or its idle timeout, or the
/// daemon stopping — rolls everything back. Meanwhile the store refuses everyone else with
/// `unavailable`.
public final class RemoteMigration: Sendable {
    /// The migration's session: stage, save, fetch and count under the current stage's schema.
    public let session: RemoteSession

    /// The migration whose session is `session` (the daemon refuses steps and commits of a
    /// session that is not a migration's).
    public init(session: RemoteSession) {
        self.session = session
    }

    /// Migrates the store to `schema` by inference inside the migration (its plan); nothing
    /// unsaved may be in the session. A refusal (`schemaMismatch`) leaves the migration where
    /// it was.
    @discardableResult
    public func step(to schema: Schema, allowDataLoss: Bool = false, dryRun: Bool = false) async throws
        -> MigrationPlan
    {
        let client = session.client
        return try await client.call {
            let wire = try await client.unary(
                Modeld_V1_SessionService.Method.StepMigration.self,
                Modeld_V1_StepMigrationRequest.with {
                    $0.sessionID = session.id
                    $0.schema = schema.wire
                    $0.allowDataLoss = allowDataLoss
                    $0.dryRun = dryRun
                })
            return try MigrationPlan(wire: wire)
        }
    }

    /// Commits every stage at once; the migration's session ends. Returns the store as it is now.
    @discardableResult
    public func commit() async throws -> StoreInfo {
        let client = session.client
        return try await client.call {
            let wire = try await client.unary(
                Modeld_V1_SessionService.Method.CommitMigration.self,
                Modeld_V1_CommitMigrationRequest.with { $0.sessionID = session.id })
            return try StoreInfo(wire: wire)
        }
    }

    /// Rolls everything back and frees the store.
    public func rollback() async throws {
        _ = try await session.close()
    }
}

extension DaemonClient {
    /// Begins a staged migration of `store`; `author` stamps its history.
    public func beginMigration(
        of store: String, author: String? = nil, uniquenessPolicy: UniquenessPolicy = .error
    ) async throws -> RemoteMigration {
        try await call(small: true) {
            let response = try await unary(
                Modeld_V1_SessionService.Method.BeginMigration.self,
                Modeld_V1_BeginMigrationRequest.with {
                    $0.store = store
                    $0.author = author ?? ""
                    $0.uniquenessPolicy = uniquenessPolicy.wire
                })
            guard let uuid = UUID(uuidString: response.storeUuid) else {
                throw ModelError(.storageFailure, "the daemon sent a bad store UUID '\(response.storeUuid)'")
            }
            return RemoteMigration(
                session: RemoteSession(
                    id: response.sessionID, store: store, storeIdentifier: uuid,
                    idleTimeout: .seconds(response.idleTimeoutSeconds), client: self))
        }
    }
}
