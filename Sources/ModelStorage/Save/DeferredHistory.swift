import ModelCore

/// History rows a group's saves wrote (``GroupMemo/history``), kept to be written together
/// before the group commits: on SQLite a statement of 32 rows costs about 4,400 instructions a
/// save less than a statement a row (a transaction row and a change row a save).
public struct DeferredHistory: Sendable {
    /// The values of each transaction row (token, timestamp, author, user), one row after another.
    public var transactions: [Value] = []
    /// The values of each change row (token, position, kind, entity, pk, changed, tombstone,
    /// count), one row after another.
    public var changes: [Value] = []

    /// Values a transaction row.
    public static let transactionWidth = 4
    /// Values a change row.
    public static let changeWidth = 8

    public init() {}

    public var isEmpty: Bool { transactions.isEmpty && changes.isEmpty }

    /// Keeps a transaction row.
    public mutating func appendTransaction(token: Int64, timestamp: Int64, author: String?, user: String?) {
        transactions.append(.int(token))
        transactions.append(.int(timestamp))
        transactions.append(author.map(Value.string) ?? .null)
        transactions.append(user.map(Value.string) ?? .null)
    }

    /// Keeps a change row.
    public mutating func appendChange(
        token: Int64, position: Int64, kind: Value, entity: String, key: Int64, changed: Value, tombstone: Value,
        count: Value
    ) {
        changes.append(.int(token))
        changes.append(.int(position))
        changes.append(kind)
        changes.append(.string(entity))
        changes.append(.int(key))
        changes.append(changed)
        changes.append(tombstone)
        changes.append(count)
    }
}
