import ModelCore

/// One saved transaction: what one save changed, by whom, when. Every process that saves to
/// the store (through the daemon or in-process) writes these, so each can see what the others did.
public struct DefaultHistoryTransaction: Hashable, Sendable {
    public let token: DefaultHistoryToken
    public let author: String?
    public let timestamp: Date
    public let changes: [HistoryChange]
    /// The store the transaction was saved to.
    public let storeIdentifier: UUID

    public var transactionIdentifier: Int64 { token.rawValue }
}

/// One object's change in a transaction, as SwiftData's: match a model's changes with
/// `case .update(let update as DefaultHistoryUpdate<Trip>)`.
public enum HistoryChange: Hashable, Sendable {
    case insert(any HistoryInsert)
    case update(any HistoryUpdate)
    case delete(any HistoryDelete)

    public var changedPersistentIdentifier: PersistentIdentifier {
        switch self {
        case .insert(let insert): insert.changedPersistentIdentifier
        case .update(let update): update.changedPersistentIdentifier
        case .delete(let delete): delete.changedPersistentIdentifier
        }
    }

    /// Whether the changed object is a `T` (or of a subclass of `T`).
    public func isChange<T: PersistentModel>(of type: T.Type) -> Bool {
        let changed: any PersistentModel.Type =
            switch self {
            case .insert(let insert): insert.modelType
            case .update(let update): update.modelType
            case .delete(let delete): delete.modelType
            }
        guard let info = try? ModelTypeInfo.of(changed), let wanted = try? ModelTypeInfo.of(type) else { return false }
        return info.isKind(of: wanted)
    }

    public static func == (lhs: HistoryChange, rhs: HistoryChange) -> Bool {
        switch (lhs, rhs) {
        case (.insert(let l), .insert(let r)): l.isEqual(to: r)
        case (.update(let l), .update(let r)): l.isEqual(to: r)
        case (.delete(let l), .delete(let r)): l.isEqual(to: r)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(changedPersistentIdentifier)
    }
}

/// What every change says: the object, its model class, its transaction.
public protocol HistoryObjectChange: Sendable {
    associatedtype Model: PersistentModel
    var changedPersistentIdentifier: PersistentIdentifier { get }
    var transactionIdentifier: Int64 { get }
}

extension HistoryObjectChange {
    var modelType: any PersistentModel.Type { Model.self }

    func isEqual(to other: any HistoryObjectChange) -> Bool {
        guard let other = other as? Self else { return false }
        return changedPersistentIdentifier == other.changedPersistentIdentifier
            && transactionIdentifier == other.transactionIdentifier && sameDetails(as: other)
    }

    func sameDetails(as other: Self) -> Bool { true }
}

/// An object inserted.
public protocol HistoryInsert: HistoryObjectChange {}

/// An object updated, with the attributes and relationships that changed.
public protocol HistoryUpdate: HistoryObjectChange {
    var updatedAttributes: [PartialKeyPath<Model>] { get }
}

/// An object deleted, with the values its model keeps on deletion (`.preserveValueOnDeletion`).
public protocol HistoryDelete: HistoryObjectChange {
    var tombstone: HistoryTombstone<Model> { get }
}

public struct DefaultHistoryInsert<Model: PersistentModel>: HistoryInsert {
    public let changedPersistentIdentifier: PersistentIdentifier
    public let transactionIdentifier: Int64
}

public struct DefaultHistoryUpdate<Model: PersistentModel>: HistoryUpdate {
    public let changedPersistentIdentifier: PersistentIdentifier
    public let transactionIdentifier: Int64
    /// The names of the changed properties, as stored.
    let names: Set<String>

    /// The changed attributes and relationships, in the order the model declares them.
    public var updatedAttributes: [PartialKeyPath<Model>] {
        guard let info = try? ModelTypeInfo.of(Model.self) else { return [] }
        return info.properties.filter { names.contains($0.name) }.compactMap { info.keyPath(of: $0, as: Model.self) }
    }

    /// The names of the changed attributes and relationships.
    public var updatedPropertyNames: Set<String> { names }

    func sameDetails(as other: Self) -> Bool { names == other.names }
}

public struct DefaultHistoryDelete<Model: PersistentModel>: HistoryDelete {
    public let changedPersistentIdentifier: PersistentIdentifier
    public let transactionIdentifier: Int64
    public let tombstone: HistoryTombstone<Model>

    func sameDetails(as other: Self) -> Bool { tombstone == other.tombstone }
}

/// The values a deleted object left behind.
public struct HistoryTombstone<Model: PersistentModel>: Hashable, Sendable {
    let values: [String: Value]

    /// The value of the property `keyPath` names, if the tombstone holds it.
    public subscript<V>(_ keyPath: KeyPath<Model, V>) -> V? {
        guard let property = (try? ModelTypeInfo.of(Model.self))?.property(for: keyPath), let codec = property.codec,
            let stored = values[property.name], let decoded = try? codec.decode(stored)
        else { return nil }
        return decoded as? V
    }

    /// The key paths of the properties the tombstone holds.
    public var attributes: [PartialKeyPath<Model>] {
        guard let info = try? ModelTypeInfo.of(Model.self) else { return [] }
        return info.properties.filter { values[$0.name] != nil }.compactMap { info.keyPath(of: $0, as: Model.self) }
    }
}

extension DefaultHistoryTransaction {
    /// The transaction as ModelClient gives it; changes of entities `types` has no class for
    /// (removed by a migration since) are left out.
    init(_ transaction: ModelCore.HistoryTransaction, types: ModelTypes, store: UUID) {
        token = transaction.token
        author = transaction.author
        timestamp = transaction.timestamp.date
        storeIdentifier = store
        let transactionID = transaction.token.rawValue
        changes = transaction.changes.compactMap { change -> HistoryChange? in
            guard let type = types.info(forEntity: change.id.entityName)?.type else { return nil }
            return Self.change(change, of: type, transaction: transactionID)
        }
    }

    private static func change<M: PersistentModel>(
        _ change: ModelCore.HistoryChange, of type: M.Type, transaction: Int64
    ) -> HistoryChange {
        switch change.kind {
        case .insert:
            .insert(DefaultHistoryInsert<M>(changedPersistentIdentifier: change.id, transactionIdentifier: transaction))
        case .update:
            .update(
                DefaultHistoryUpdate<M>(
                    changedPersistentIdentifier: change.id, transactionIdentifier: transaction,
                    names: Set(change.changedProperties)))
        case .delete:
            .delete(
                DefaultHistoryDelete<M>(
                    changedPersistentIdentifier: change.id, transactionIdentifier: transaction,
                    tombstone: HistoryTombstone(values: change.tombstone)))
        }
    }
}
