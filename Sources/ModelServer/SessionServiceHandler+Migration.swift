import Foundation
import GRPCCore
import ModelCore
import ModelEngine
import ModelStorage
import ModelWire

/// Staged migrations: a migration session holds its store's staged migration from
/// BeginMigration to CommitMigration (or to its end, which rolls it back).
extension SessionServiceHandler {
    func beginMigration(request: Modeld_V1_BeginMigrationRequest, context: ServerContext) async throws
        -> Modeld_V1_OpenSessionResponse
    {
        try await core.rpc.handle("BeginMigration") {
            let store = try core.store(request.store, for: .manage)
            let author = request.author.isEmpty ? nil : request.author
            let uniquenessPolicy = try UniquenessPolicy(wire: request.uniquenessPolicy)
            let timeout = core.configuration.migrationIdleTimeout
            let session = try await core.catalog.beginMigration(of: store, author: author) { migration, container in
                try core.sessions.openMigration(
                    on: store, migration: migration,
                    context: container.makeContext(author: author, uniquenessPolicy: uniquenessPolicy),
                    idleTimeout: timeout)
            }
            core.logger.info(
                "store '\(store.name)': a staged migration began (session \(session.id)\(author.map { ", by \($0)" } ?? ""))"
            )
            return Modeld_V1_OpenSessionResponse.with {
                $0.sessionID = session.id
                $0.storeUuid = store.storeIdentifier.uuidString.lowercased()
                $0.idleTimeoutSeconds = timeout.components.seconds
            }
        }
    }

    func stepMigration(request: Modeld_V1_StepMigrationRequest, context: ServerContext) async throws
        -> Modeld_V1_MigrationPlan
    {
        try await core.rpc.handle("StepMigration") {
            let (session, migration) = try migrationSession(request.sessionID)
            let schema = try Schema(wire: request.schema)
            try schema.validate()
            return try await session.run { context in
                try await Self.checkNothingUnsaved(context, session: session.id, before: "a step")
                let plan = try await migration.migrate(
                    to: schema, options: MigrationOptions(dryRun: request.dryRun, allowDataLoss: request.allowDataLoss))
                let applied = !request.dryRun && !plan.isEmpty
                if !request.dryRun {
                    let container = try await ModelContainer.open(backend: migration)
                    session.replaceContext(
                        container.makeContext(
                            author: context.author, uniquenessPolicy: await context.uniquenessPolicy))
                    session.store.migration(by: session.id, reached: plan.toVersion)
                }
                return plan.wire(applied: applied)
            }
        }
    }

    func commitMigration(request: Modeld_V1_CommitMigrationRequest, context: ServerContext) async throws
        -> Modeld_V1_StoreInfo
    {
        try await core.rpc.handle("CommitMigration") {
            let (session, migration) = try migrationSession(request.sessionID)
            let store = session.store
            let before = store.container.schema.versionHash
            try await session.run { context in
                try await Self.checkNothingUnsaved(context, session: session.id, before: "the commit")
                try await core.catalog.commitMigration(migration, of: store)
            }
            _ = await core.sessions.end(session.id, reason: "committed its migration")
            let after = store.container.schema.versionHash
            var closed = 0
            if after != before {
                closed = await core.sessions.end(
                    where: { $0.store === store },
                    reason:
                        "was closed: its store '\(store.name)' migrated to schema version \(after.prefix(12)) (from \(before.prefix(12))); what it had not saved was discarded",
                    code: .schemaMismatch)
            }
            store.history.notify()
            // The migration's saves went by the store's watches, which the commit kept when the
            // schema stayed as it was: they catch up from the history.
            if after == before, let token = try? await store.container.backend.currentHistoryToken() {
                store.watches.heard(token)
            }
            core.logger.info(
                "store '\(store.name)': a staged migration committed (session \(session.id)), schema \(after.prefix(12))\(closed > 0 ? ", closing \(closed) session(s)" : "")"
            )
            return try await core.info(store)
        }
    }

    /// The migration session `id` and its migration; INVALID_ARGUMENT for another session.
    private func migrationSession(_ id: String) throws(ModelError) -> (Session, any StagedMigration) {
        let session = try core.session(id)
        guard let migration = session.migration else {
            throw ModelError(
                .invalidArgument,
                "session \(id) is not a migration session: begin a staged migration with BeginMigration",
                context: ["session": id])
        }
        return (session, migration)
    }

    /// A step or a commit takes what the session saved: unsaved changes are refused, not lost.
    private static func checkNothingUnsaved(_ context: ModelContext, session: String, before what: String)
        async throws(ModelError)
    {
        guard await context.hasChanges else { return }
        throw ModelError(
            .inUse,
            "session \(session) has unsaved changes: save them (or roll them back) before \(what) of its migration",
            context: ["session": session])
    }
}
