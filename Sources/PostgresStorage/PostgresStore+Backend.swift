import Foundation
import ModelCore
import ModelStorage

extension PostgresStore {
    /// The store's URL.
    public var location: StoreLocation {
        StoreLocation(scheme: "postgres", path: endpoint.url, url: endpoint.url)
    }

    /// Deletes the history transactions before `token`.
    public func deleteHistory(before token: HistoryToken) async throws {
        _ = try await currentLayout()
        let metadata = metadata
        try await writer.run { session in
            try session.transaction {
                try session.query("DELETE FROM \(metadata.changeTable) WHERE \"token\" < $1", [.int(token.rawValue)])
                try session.query(
                    "DELETE FROM \(metadata.transactionTable) WHERE \"token\" < $1", [.int(token.rawValue)])
            }
        }
    }
}

extension PostgresStore {
    public func migrate(to schema: Schema, options: MigrationOptions) async throws -> MigrationPlan {
        throw ModelError(.invalidArgument, "migrations are not supported by the PostgreSQL backend yet")
    }

    public func beginStagedMigration(author: String?) async throws -> any StagedMigration {
        throw ModelError(.invalidArgument, "migrations are not supported by the PostgreSQL backend yet")
    }
}
