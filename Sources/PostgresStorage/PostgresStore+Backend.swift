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
        try checkWritable()
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
