import Foundation
import ModelCore
import ModelStorage

extension SaveOperation {
    /// Step 7: one transaction with the next token and the author, and its changes as the save
    /// algorithm listed them (``SaveWrites/history``). Inserts of one entity with consecutive
    /// keys, one after another, are kept as one row (``insertRows(_:)``).
    func recordHistory(_ changes: [HistoryChange]) throws -> HistoryToken {
        try Self.recordHistory(author: self.changes.author, user: self.changes.user, connection) { token, rows in
            // Inserts come first and record no property names.
            let inserts = changes.prefix { $0.kind == .insert }
            var position = Self.appendInserts(Self.insertRows(inserts), token: token, to: &rows)
            for change in changes.dropFirst(inserts.count) {
                position += 1
                let (changed, tombstone) = try StoredHistory.columns(of: change)
                rows.appendChange(
                    token: token, position: position, kind: .string(change.kind.rawValue),
                    entity: change.id.entityName, key: change.id.primaryKey ?? 0,
                    changed: changed.map(Value.string) ?? .null, tombstone: tombstone.map(Value.string) ?? .null,
                    count: .null)
            }
        }
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

    /// Keeps `inserts` as the change rows of transaction `token`, from position 1 on; returns
    /// the last position.
    static func appendInserts(_ inserts: [InsertRows], token: Int64, to rows: inout DeferredHistory) -> Int64 {
        let kind = Value.string(HistoryChange.Kind.insert.rawValue)
        var position: Int64 = 0
        for insert in inserts {
            position += 1
            rows.appendChange(
                token: token, position: position, kind: kind, entity: insert.entityName, key: insert.firstKey,
                changed: .null, tombstone: .null, count: insert.count == 1 ? .null : .int(Int64(insert.count)))
        }
        return position
    }

    /// Writes a new history transaction, stamped now, by `author` for `user`, with the change
    /// rows `changes` keeps for its token; returns the token. In a group of saves the rows wait
    /// in its memo for the group's others (``DeferredHistoryWriter``); a save alone writes them
    /// at once.
    static func recordHistory(
        author: String?, user: String?, _ connection: SQLiteConnection,
        changes: (Int64, inout DeferredHistory) throws -> Void
    ) throws -> HistoryToken {
        let token = try StoreMetadata.sequence(StoreMetadata.historySequence, connection) + 1
        try StoreMetadata.setSequence(StoreMetadata.historySequence, to: token, connection)
        let timestamp = Timestamp(Date()).microsecondsSince1970
        if let memo = connection.groupMemo {
            memo.history.appendTransaction(token: token, timestamp: timestamp, author: author, user: user)
            try changes(token, &memo.history)
        } else {
            var rows = DeferredHistory()
            rows.appendTransaction(token: token, timestamp: timestamp, author: author, user: user)
            try changes(token, &rows)
            try DeferredHistoryWriter.write(rows, connection)
        }
        return HistoryToken(token)
    }
}
