import Foundation
import ModelCore

/// How a history change is kept in a row of a relational backend's change table (SQLite's,
/// PostgreSQL's): its kind, entity and key, the names of the properties an update changed and
/// the tombstone of a delete as JSON; a migration's row has kind `schema` and the versions as
/// JSON in `changed`, which readers of older versions skip.
public enum StoredHistory {
    /// The kind of a migration's row.
    public static let schemaKind = "schema"

    /// The `changed` and `tombstone` columns of `change`.
    public static func columns(of change: HistoryChange) throws -> (changed: String?, tombstone: String?) {
        (
            change.kind == .update ? try json(change.changedProperties) : nil,
            change.kind == .delete ? try json(change.tombstone) : nil
        )
    }

    /// The `changed` column of a migration's row.
    public static func column(of change: SchemaVersionChange) throws -> String {
        try json(change)
    }

    /// A change row read back.
    public enum Row: Sendable {
        case schema(SchemaVersionChange)
        case change(HistoryChange)
    }

    /// Adds a row read back to its transaction.
    public static func add(_ row: Row, to transaction: inout HistoryTransaction) {
        switch row {
        case .schema(let change): transaction.schemaChange = change
        case .change(let change): transaction.changes.append(change)
        }
    }

    /// The row of kind `kind`, or nil for a kind this version does not know.
    public static func row(
        kind: String, entity: String, key: Int64, changed: String?, tombstone: String?, storeIdentifier: UUID
    ) throws -> Row? {
        if kind == schemaKind {
            guard let changed else { return nil }
            return .schema(try JSONDecoder().decode(SchemaVersionChange.self, from: Data(changed.utf8)))
        }
        guard let kind = HistoryChange.Kind(rawValue: kind) else { return nil }
        return .change(
            HistoryChange(
                kind: kind,
                id: PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key)),
                changedProperties: try changed.map { try JSONDecoder().decode([String].self, from: Data($0.utf8)) }
                    ?? [],
                tombstone: try tombstone.map { try JSONDecoder().decode([String: Value].self, from: Data($0.utf8)) }
                    ?? [:]))
    }

    private static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// A backend that can say cheaply how much history it keeps (for the daemon's metrics): the
/// oldest transaction's token, without reading the transaction.
public protocol StorageHistoryExtent: StorageBackend {
    /// The token of the oldest history transaction kept, or nil when none is.
    func oldestHistoryToken() async throws -> HistoryToken?
}
