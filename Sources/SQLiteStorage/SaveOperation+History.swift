import Foundation
import ModelCore
import ModelStorage

extension SaveOperation {
    /// Step 7: one transaction with the next token and the author, and its changes as the save
    /// algorithm listed them (``SaveWrites/history``).
    func recordHistory(_ changes: [HistoryChange]) throws -> HistoryToken {
        let token = try Self.recordTransaction(author: self.changes.author, user: self.changes.user, connection)
        let changeSQL = Self.changeSQL
        // Inserts come first and record no property names: one statement binds them all.
        let inserts = changes.prefix { $0.kind == .insert }
        var position: Int64 = 0
        try connection.runEach(changeSQL, over: inserts) { change, statement in
            position += 1
            try statement.bind(.int(token), at: 1)
            try statement.bind(.int(position), at: 2)
            try statement.bind(.string(HistoryChange.Kind.insert.rawValue), at: 3)
            try statement.bind(.string(change.id.entityName), at: 4)
            try statement.bind(.int(change.id.primaryKey ?? 0), at: 5)
        }
        for change in changes.dropFirst(inserts.count) {
            position += 1
            let (changed, tombstone) = try StoredHistory.columns(of: change)
            try connection.run(
                changeSQL,
                [
                    .int(token), .int(position), .string(change.kind.rawValue), .string(change.id.entityName),
                    .int(change.id.primaryKey ?? 0), changed.map(Value.string) ?? .null,
                    tombstone.map(Value.string) ?? .null,
                ])
        }
        return HistoryToken(token)
    }

    static let changeSQL = "INSERT INTO \(StoreMetadata.changeTable) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"

    /// Writes a new history transaction, stamped now, by `author` for `user`, and returns its token.
    static func recordTransaction(author: String?, user: String?, _ connection: SQLiteConnection) throws -> Int64 {
        let token = try StoreMetadata.sequence(StoreMetadata.historySequence, connection) + 1
        try StoreMetadata.setSequence(StoreMetadata.historySequence, to: token, connection)
        try connection.run(
            "INSERT INTO \(StoreMetadata.transactionTable) (\"token\", \"timestamp\", \"author\", \"user\") VALUES (?1, ?2, ?3, ?4)",
            [
                .int(token), .int(Timestamp(Date()).microsecondsSince1970), author.map(Value.string) ?? .null,
                user.map(Value.string) ?? .null,
            ])
        return token
    }
}
