import Foundation
import ModelCore

extension SaveOperation {
    /// Step 7: one transaction with the next token and the author, and one change per object:
    /// inserts, then updates (inserts upserted into saved objects first, an object changed twice
    /// once with the union of the names), then deletes with their tombstones, each in
    /// change-set order.
    func recordHistory(_ writes: Writes, tombstones: [(ObjectRef, [String: Value])], deleted: Set<ObjectRef>,
                       stored: StoredRows) throws -> HistoryToken {
        let token = try StoreMetadata.sequence(StoreMetadata.historySequence, connection) + 1
        try StoreMetadata.setSequence(StoreMetadata.historySequence, to: token, connection)
        try connection.run("INSERT INTO \(StoreMetadata.transactionTable) VALUES (?1, ?2, ?3)",
                           [.int(token), .int(Timestamp(Date()).microsecondsSince1970), changes.author.map(Value.string) ?? .null])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let changeSQL = "INSERT INTO \(StoreMetadata.changeTable) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        var position: Int64 = 0
        func record(_ kind: HistoryChange.Kind, _ entity: String, _ ref: ObjectRef, changed: [String]? = nil, tombstone: [String: Value]? = nil) throws {
            position += 1
            let changedText = try changed.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
            let tombstoneText = try tombstone.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
            try connection.run(changeSQL, [.int(token), .int(position), .string(kind.rawValue), .string(entity), .int(ref.key),
                                           changedText.map(Value.string) ?? .null, tombstoneText.map(Value.string) ?? .null])
        }
        // Inserts record no property names: one statement binds them all.
        try connection.runEach(changeSQL, over: writes.inserted) { insert, statement in
            position += 1
            try statement.bind(.int(token), at: 1)
            try statement.bind(.int(position), at: 2)
            try statement.bind(.string(HistoryChange.Kind.insert.rawValue), at: 3)
            try statement.bind(.string(insert.entity), at: 4)
            try statement.bind(.int(insert.ref.key), at: 5)
        }
        for update in writes.updated where !deleted.contains(update.ref) {
            try record(.update, update.entity.name, update.ref, changed: (writes.changedProperties[update.ref] ?? []).sorted())
        }
        for (ref, values) in tombstones {
            try record(.delete, stored.rows[ref]?.entity ?? ref.root, ref, tombstone: values)
        }
        return HistoryToken(token)
    }
}
