import ModelCore

/// Which history transactions to read: those after a token, optionally by one author only.
public struct HistoryDescriptor: Hashable, Sendable {
    /// Transactions after this token (all of them when nil).
    public var token: DefaultHistoryToken?
    /// Only the transactions of this author (a context's ``ModelContext/author``).
    public var author: String?
    public var fetchLimit: Int?

    public init(after token: DefaultHistoryToken? = nil, author: String? = nil, fetchLimit: Int? = nil) {
        self.token = token
        self.author = author
        self.fetchLimit = fetchLimit
    }
}

/// One saved transaction: what one save changed, by whom, when. Every process that saves to
/// the store (through the daemon or in-process) writes these, so each can see what the others did.
public struct DefaultHistoryTransaction: Hashable, Sendable {
    public let token: DefaultHistoryToken
    public let author: String?
    public let timestamp: Date
    public let changes: [HistoryChange]

    public var transactionIdentifier: Int64 { token.rawValue }
}

/// One object's change in a transaction.
public enum HistoryChange: Hashable, Sendable {
    case insert(HistoryInsert)
    case update(HistoryUpdate)
    case delete(HistoryDelete)

    public var changedPersistentIdentifier: PersistentIdentifier {
        switch self {
        case .insert(let insert): insert.changedPersistentIdentifier
        case .update(let update): update.changedPersistentIdentifier
        case .delete(let delete): delete.changedPersistentIdentifier
        }
    }

    /// Whether the changed object is a `T` (or of a subclass of `T`).
    public func isChange<T: PersistentModel>(of type: T.Type) -> Bool {
        guard let changed = ModelTypeInfoHolder.modelType(changedPersistentIdentifier.entityName, in: types),
            let info = try? ModelTypeInfo.of(changed), let wanted = try? ModelTypeInfo.of(type)
        else { return false }
        return info.isKind(of: wanted)
    }

    private var types: ModelTypeInfoHolder {
        switch self {
        case .insert(let insert): insert.types
        case .update(let update): update.types
        case .delete(let delete): delete.types
        }
    }
}

/// An object inserted.
public struct HistoryInsert: Hashable, Sendable {
    public let changedPersistentIdentifier: PersistentIdentifier
    let types: ModelTypeInfoHolder
}

/// An object updated: which properties changed.
public struct HistoryUpdate: Hashable, Sendable {
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The names of the changed attributes and relationships.
    public let updatedPropertyNames: Set<String>
    let types: ModelTypeInfoHolder

    /// Whether the property `keyPath` names changed.
    public func updated<M: PersistentModel>(_ keyPath: PartialKeyPath<M>) -> Bool {
        guard let name = (try? ModelTypeInfo.of(M.self))?.property(for: keyPath)?.name else { return false }
        return updatedPropertyNames.contains(name)
    }
}

/// An object deleted, with the values its model keeps on deletion (`.preserveValueOnDeletion`).
public struct HistoryDelete: Hashable, Sendable {
    public let changedPersistentIdentifier: PersistentIdentifier
    public let tombstone: HistoryTombstone
    let types: ModelTypeInfoHolder
}

/// The values a deleted object left behind.
public struct HistoryTombstone: Hashable, Sendable {
    let values: [String: Value]

    /// The property names the tombstone holds.
    public var propertyNames: Set<String> { Set(values.keys) }

    /// The value of the property `keyPath` names, if the tombstone holds it.
    public subscript<M: PersistentModel, V>(_ keyPath: KeyPath<M, V>) -> V? {
        guard let property = (try? ModelTypeInfo.of(M.self))?.property(for: keyPath), let codec = property.codec,
            let stored = values[property.name], let decoded = try? codec.decode(stored)
        else { return nil }
        return decoded as? V
    }
}

/// The model classes a container knows, carried by history changes so they can tell a change's
/// model type; equal whatever the container.
struct ModelTypeInfoHolder: Hashable, @unchecked Sendable { // `types` is immutable once made (see ModelTypes).
    let types: ModelTypes?

    static func == (lhs: Self, rhs: Self) -> Bool { true }
    func hash(into hasher: inout Hasher) {}

    static func modelType(_ entity: String, in holder: ModelTypeInfoHolder) -> (any PersistentModel.Type)? {
        holder.types?.info(forEntity: entity)?.type
    }
}

extension DefaultHistoryTransaction {
    init(_ transaction: HistoryTransaction, types: ModelTypes) {
        let holder = ModelTypeInfoHolder(types: types)
        token = transaction.token
        author = transaction.author
        timestamp = transaction.timestamp.date
        changes = transaction.changes.map { change in
            switch change.kind {
            case .insert: .insert(HistoryInsert(changedPersistentIdentifier: change.id, types: holder))
            case .update:
                .update(
                    HistoryUpdate(
                        changedPersistentIdentifier: change.id, updatedPropertyNames: Set(change.changedProperties),
                        types: holder))
            case .delete:
                .delete(
                    HistoryDelete(
                        changedPersistentIdentifier: change.id, tombstone: HistoryTombstone(values: change.tombstone),
                        types: holder))
            }
        }
    }
}

extension ModelContext {
    /// The history transactions `descriptor` selects, oldest first: what this and every other
    /// context, process or stack saved to the store.
    public func fetchHistory(_ descriptor: HistoryDescriptor) async throws -> [DefaultHistoryTransaction] {
        let transactions = try await container.store.history(
            after: descriptor.token, author: descriptor.author, limit: descriptor.fetchLimit)
        return transactions.map { DefaultHistoryTransaction($0, types: container.types) }
    }

    /// The history transactions after `token` (all of them when nil).
    public func fetchHistory(after token: DefaultHistoryToken?) async throws -> [DefaultHistoryTransaction] {
        try await fetchHistory(HistoryDescriptor(after: token))
    }
}
