/// The position of a transaction in a store's history. Tokens grow by one with every save.
public struct HistoryToken: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: Int64

    public init(_ rawValue: Int64) { self.rawValue = rawValue }

    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// One save, as history records it.
public struct HistoryTransaction: Hashable, Sendable {
    public var token: HistoryToken
    public var timestamp: Timestamp
    public var author: String?
    public var changes: [HistoryChange]
    /// For a migration: the schema versions before and after (its `changes` are empty).
    public var schemaChange: SchemaVersionChange?
    /// The Unix user who saved it through the daemon (as the kernel reported the caller), beside
    /// the author the client chose; nil for a save made in a process of its own.
    public var user: String?

    public init(
        token: HistoryToken, timestamp: Timestamp, author: String?, changes: [HistoryChange],
        schemaChange: SchemaVersionChange? = nil, user: String? = nil
    ) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.changes = changes
        self.schemaChange = schemaChange
        self.user = user
    }
}

/// A migration's record in history: the store's schema version hash before and after.
public struct SchemaVersionChange: Hashable, Sendable, Codable {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }
}

/// One object's change within a transaction.
public struct HistoryChange: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, Codable {
        case insert, update, delete
    }

    public var kind: Kind
    /// The object's permanent identifier.
    public var id: PersistentIdentifier
    /// For updates: the names of the changed attributes and relationships, sorted.
    public var changedProperties: [String]
    /// For deletes: the values of the attributes marked `preserveValueOnDeletion`.
    public var tombstone: [String: Value]

    public init(
        kind: Kind, id: PersistentIdentifier, changedProperties: [String] = [], tombstone: [String: Value] = [:]
    ) {
        self.kind = kind
        self.id = id
        self.changedProperties = changedProperties
        self.tombstone = tombstone
    }
}
