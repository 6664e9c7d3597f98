import Foundation
import ModelCore
import ModelStorage

extension SQLiteStore {
    /// History transactions after `token` (from the start when nil), oldest first, at most
    /// `limit` of them.
    public func history(after token: HistoryToken?, limit: Int?) async throws -> [HistoryTransaction] {
        _ = try cachedLayout()
        if let limit, limit < 0 { throw ModelError(.invalidArgument, "limit \(limit) is negative") }
        let storeIdentifier = storeIdentifier
        return try await readers.run { connection in
            try Self.history(connection, after: token, limit: limit, storeIdentifier: storeIdentifier)
        }
    }

    /// The token of the latest transaction ever saved (kept after its history is deleted), or nil.
    public func currentHistoryToken() async throws -> HistoryToken? {
        _ = try cachedLayout()
        let value = try await readers.run { connection in
            try connection.transaction(write: false) {
                try StoreMetadata.sequence(StoreMetadata.historySequence, connection)
            }
        }
        return value > 0 ? HistoryToken(value) : nil
    }

    /// Deletes the history transactions before `token`.
    public func deleteHistory(before token: HistoryToken) async throws {
        _ = try cachedLayout()
        try await writer.run { connection in
            try connection.transaction(write: true) {
                try connection.run(
                    "DELETE FROM \(StoreMetadata.changeTable) WHERE \"token\" < ?1", [.int(token.rawValue)])
                try connection.run(
                    "DELETE FROM \(StoreMetadata.transactionTable) WHERE \"token\" < ?1", [.int(token.rawValue)])
            }
        }
    }

    /// History transactions after `token` read on `connection`, in a read transaction of their
    /// own (or a savepoint of the caller's).
    static func history(
        _ connection: SQLiteConnection, after token: HistoryToken?, limit: Int?, storeIdentifier: UUID
    ) throws -> [HistoryTransaction] {
        try connection.transaction(write: false) {
            var transactions: [HistoryTransaction] = []
            try connection.query(
                "SELECT \"token\", \"timestamp\", \"author\", \"user\" FROM \(StoreMetadata.transactionTable) WHERE \"token\" > ?1 ORDER BY \"token\" LIMIT ?2",
                [.int(token?.rawValue ?? 0), .int(Int64(limit ?? -1))]
            ) { row in
                transactions.append(
                    HistoryTransaction(
                        token: HistoryToken(row.int64(0)),
                        timestamp: Timestamp(microsecondsSince1970: row.int64(1)),
                        author: row.isNull(2) ? nil : row.text(2), changes: [], user: row.isNull(3) ? nil : row.text(3))
                )
            }
            guard let first = transactions.first?.token, let last = transactions.last?.token else { return [] }
            var positions: [Int64: Int] = [:]
            for (index, transaction) in transactions.enumerated() { positions[transaction.token.rawValue] = index }
            try connection.query(
                """
                SELECT "token", "kind", "entity", "pk", "changed", "tombstone", "count" FROM \(StoreMetadata.changeTable) \
                WHERE "token" BETWEEN ?1 AND ?2 ORDER BY "token", "position"
                """, [.int(first.rawValue), .int(last.rawValue)]
            ) { row in
                guard let index = positions[row.int64(0)] else { return }
                let kind = row.text(1), entity = row.text(2), key = row.int64(3)
                let changed = row.isNull(4) ? nil : row.text(4), tombstone = row.isNull(5) ? nil : row.text(5)
                // A row of inserts stands for `count` objects with consecutive keys.
                let count = row.isNull(6) ? 1 : row.int64(6)
                for offset in 0..<max(count, 1) {
                    guard
                        let stored = try StoredHistory.row(
                            kind: kind, entity: entity, key: key + offset, changed: changed, tombstone: tombstone,
                            storeIdentifier: storeIdentifier)
                    else { return }
                    StoredHistory.add(stored, to: &transactions[index])
                }
            }
            return transactions
        }
    }
}

extension SQLiteStore: StorageHistoryExtent {
    public func oldestHistoryToken() async throws -> HistoryToken? {
        _ = try cachedLayout()
        let value = try await readers.run { connection in
            try connection.scalarInt("SELECT min(\"token\") FROM \(StoreMetadata.transactionTable)")
        }
        return value.map(HistoryToken.init)
    }
}
