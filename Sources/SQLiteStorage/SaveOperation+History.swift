import Foundation
import ModelCore
import ModelStorage

extension SaveOperation {
    /// Step 7: one transaction with the next token and the author, and its changes as the save
    /// algorithm listed them (``SaveWrites/history``). Inserts of one entity with consecutive
    /// keys, one after another, are kept as one row (``insertRows(_:)``).
    func recordHistory(_ changes: [HistoryChange]) throws -> HistoryToken {
        let token = try Self.recordTransaction(author: self.changes.author, user: self.changes.user, connection)
        let changeSQL = Self.changeSQL
        // Inserts come first and record no property names: one statement binds them all.
        let inserts = changes.prefix { $0.kind == .insert }
        var position: Int64 = 0
        try Self.recordInserts(Self.insertRows(inserts), token: token, position: &position, connection)
        for change in changes.dropFirst(inserts.count) {
            position += 1
            let (changed, tombstone) = try StoredHistory.columns(of: change)
            if let memo = connection.groupMemo {
                memo.history.appendChange(
                    token: token, position: position, kind: .string(change.kind.rawValue),
                    entity: change.id.entityName, key: change.id.primaryKey ?? 0,
                    changed: changed.map(Value.string) ?? .null, tombstone: tombstone.map(Value.string) ?? .null,
                    count: .null)
                continue
            }
            try connection.run(
                changeSQL,
                [
                    .int(token), .int(position), .string(change.kind.rawValue), .string(change.id.entityName),
                    .int(change.id.primaryKey ?? 0), changed.map(Value.string) ?? .null,
                    tombstone.map(Value.string) ?? .null, .null,
                ])
        }
        return HistoryToken(token)
    }

    /// Inserts as history rows: one per entity and run of consecutive keys, in their order.
    static func insertRows(_ inserts: some Collection<HistoryChange>) -> [InsertRows] {
        var rows: [InsertRows] = []
        for insert in inserts {
            let key = insert.id.primaryKey ?? 0
            if let last = rows.last, last.entityName == insert.id.entityName, last.firstKey + Int64(last.count) == key {
                rows[rows.count - 1].count += 1
            } else {
                rows.append(InsertRows(entityName: insert.id.entityName, firstKey: key, count: 1))
            }
        }
        return rows
    }

    /// Objects of one entity inserted with consecutive keys: one history row.
    struct InsertRows {
        let entityName: String
        let firstKey: Int64
        var count: Int
    }

    /// Writes `rows` as the history rows of transaction `token`, from `position` on.
    static func recordInserts(
        _ rows: [InsertRows], token: Int64, position: inout Int64, _ connection: SQLiteConnection
    ) throws {
        let kind = Value.string(HistoryChange.Kind.insert.rawValue)
        if let memo = connection.groupMemo {
            for row in rows {
                position += 1
                memo.history.appendChange(
                    token: token, position: position, kind: kind, entity: row.entityName, key: row.firstKey,
                    changed: .null, tombstone: .null, count: row.count == 1 ? .null : .int(Int64(row.count)))
            }
            return
        }
        try connection.runEach(changeSQL, over: rows, bindsSameParameters: true) { row, statement in
            position += 1
            try statement.bind(.int(token), at: 1)
            try statement.bind(.int(position), at: 2)
            try statement.bind(kind, at: 3)
            try statement.bind(.string(row.entityName), at: 4)
            try statement.bind(.int(row.firstKey), at: 5)
            try statement.bind(row.count == 1 ? .null : .int(Int64(row.count)), at: 8)
        }
    }

    static let changeSQL =
        "INSERT INTO \(StoreMetadata.changeTable) (\(StoreMetadata.changeColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"

    static let transactionSQL =
        "INSERT INTO \(StoreMetadata.transactionTable) (\"token\", \"timestamp\", \"author\", \"user\") VALUES (?1, ?2, ?3, ?4)"

    /// Writes a new history transaction, stamped now, by `author` for `user`, and returns its token.
    static func recordTransaction(author: String?, user: String?, _ connection: SQLiteConnection) throws -> Int64 {
        let token = try StoreMetadata.sequence(StoreMetadata.historySequence, connection) + 1
        try StoreMetadata.setSequence(StoreMetadata.historySequence, to: token, connection)
        let timestamp = Timestamp(Date()).microsecondsSince1970
        // In a group, the row waits for the group's others (DeferredHistoryWriter).
        if let memo = connection.groupMemo {
            memo.history.appendTransaction(token: token, timestamp: timestamp, author: author, user: user)
            return token
        }
        try connection.run(
            transactionSQL,
            [.int(token), .int(timestamp), author.map(Value.string) ?? .null, user.map(Value.string) ?? .null])
        return token
    }
}
