import Foundation
import ModelCore

extension SaveOperation {
    /// Step 7: one history transaction with the next token and the author; one change per object:
    /// inserts, then updates (inserts that became upserts first, as updates naming the
    /// properties they gave), then deletes with their tombstones, each in change-set order.
    func recordHistory() throws {
        let token = try StoreMetadata.sequence(StoreMetadata.historySequence, connection) + 1
        try StoreMetadata.setSequence(StoreMetadata.historySequence, to: token, connection)
        let now = Timestamp(Date()).microsecondsSince1970
        try connection.run("INSERT INTO \(StoreMetadata.transactionTable) VALUES (?1, ?2, ?3)",
                           [.int(token), .int(now), changes.author.map(Value.string) ?? .null])
        var position: Int64 = 0
        func record(_ kind: HistoryChange.Kind, _ id: PersistentIdentifier, changed: [String]? = nil, tombstone: [String: Value]? = nil) throws {
            position += 1
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let changedText = try changed.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
            let tombstoneText = try tombstone.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
            try connection.run("INSERT INTO \(StoreMetadata.changeTable) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                               [.int(token), .int(position), .string(kind.rawValue), .string(id.entityName), .int(id.primaryKey ?? 0),
                                changedText.map(Value.string) ?? .null, tombstoneText.map(Value.string) ?? .null])
        }
        for (index, insert) in plan.inserts.enumerated() where upserts[index] == nil {
            if let id = result.remappedIdentifiers[insert.id] { try record(.insert, id) }
        }
        var updated: [ObjectRef: (id: PersistentIdentifier, changed: Set<String>)] = [:]
        var order: [ObjectRef] = []
        func note(_ ref: ObjectRef, _ entity: String, _ properties: [String]) {
            guard !deleted.contains(ref) else { return }
            if updated[ref] == nil {
                order.append(ref)
                updated[ref] = (permanent(entity, ref.key), [])
            }
            updated[ref]?.changed.formUnion(properties)
        }
        for (index, insert) in plan.inserts.enumerated() {
            if case .stored(let ref, let entity)? = upserts[index] { note(ref, entity, insert.givenProperties) }
        }
        for update in plan.updates {
            if let (ref, row) = existing(update.id) { note(ref, row.entity, update.changedProperties) }
        }
        for ref in order {
            if let (id, changed) = updated[ref] { try record(.update, id, changed: changed.sorted()) }
        }
        for (id, values) in tombstones { try record(.delete, id, tombstone: values) }
        result.token = HistoryToken(token)
    }
}
