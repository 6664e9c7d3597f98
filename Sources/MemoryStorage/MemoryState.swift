import ModelCore
import ModelStorage

extension ObjectRef {
    /// A reference that matches no object: what an unknown temporary identifier in a predicate
    /// stands for (keys start at 1 and every root has a name).
    static let unmatched = ObjectRef(root: "", key: 0)
}

/// One stored object: a row of its hierarchy's table, as the SQLite backend keeps it.
struct Row: Hashable, Sendable {
    /// The concrete entity.
    var entity: String
    var version: Int64
    /// Non-nil attribute values by name; an absent name is nil.
    var attributes: [String: Value]
    /// Stored to-one relationships (storage `.foreignKey`) by name: the target's key.
    var foreignKeys: [String: Int64]

    /// The value of attribute `name`, ``Value/null`` when absent.
    func value(_ name: String) -> Value { attributes[name] ?? .null }
}

/// The state of a memory store: the facts the SQLite backend keeps in its tables, plus the
/// indexes that make relationship lookups and uniqueness checks cheap. A value: a save plans
/// against it and then applies the plan; an overlay applies to a copy.
struct MemoryState: Sendable {
    /// The schema the rows follow.
    var schema: ResolvedSchema
    /// Rows by hierarchy (root entity name), then by primary key.
    var tables: [String: [Int64: Row]] = [:]
    /// The last key allocated per hierarchy; never goes down, even when rows are deleted.
    var sequences: [String: Int64] = [:]
    /// Join tables by name.
    var joins: [String: JoinRows] = [:]
    /// Reverse index of foreign keys: `Root.relationship` → target key → source keys.
    var referrers: [String: [Int64: Set<Int64>]] = [:]
    /// Unique keys of rows, by ``UniqueKey/slot(root:constraint:)``.
    var uniqueIndex: [String: [UniqueKey: Set<Int64>]] = [:]
    /// Saved transactions, oldest first.
    var history: [HistoryTransaction] = []
    /// The token of the latest transaction ever written (history deletion keeps it).
    var lastToken: Int64 = 0

    init(schema: ResolvedSchema) {
        self.schema = schema
    }

    /// Whether no objects are stored.
    var isEmpty: Bool { tables.values.allSatisfy(\.isEmpty) }

    /// The row of `ref`, if it exists.
    func row(_ ref: ObjectRef) -> Row? { tables[ref.root]?[ref.key] }

    /// The root entity name of `entityName` (the name itself for unknown entities).
    func root(of entityName: String) -> String { schema[entityName]?.root ?? entityName }

    /// The stored object that `id` names: the key's row in the hierarchy of the identifier's
    /// entity, when that row's entity is the identifier's entity or one of its subentities.
    func object(for id: PersistentIdentifier) -> ObjectRef? {
        guard let pk = id.primaryKey, let entity = schema[id.entityName] else { return nil }
        let ref = ObjectRef(root: entity.root, key: pk)
        guard let row = row(ref), schema[row.entity]?.isKind(of: id.entityName) == true else { return nil }
        return ref
    }

    /// Writes `row` at `ref` (inserting or replacing), keeping every index in step.
    mutating func write(_ ref: ObjectRef, _ row: Row) {
        if let old = tables[ref.root]?[ref.key] { unindex(ref, old) }
        tables[ref.root, default: [:]][ref.key] = row
        index(ref, row)
    }

    /// Removes the row at `ref` and its join-table rows. Foreign keys of other rows that point to
    /// it are left alone (they dangle, as under a `noAction` delete rule).
    mutating func remove(_ ref: ObjectRef) {
        guard let old = tables[ref.root]?[ref.key] else { return }
        unindex(ref, old)
        tables[ref.root]?[ref.key] = nil
        for table in schema.joinTables {
            if table.sourceRoot == ref.root { joins[table.name, default: JoinRows()].removeAll(source: ref.key) }
            if table.targetRoot == ref.root { joins[table.name, default: JoinRows()].removeAll(target: ref.key) }
        }
    }

    /// Adds or removes one pair of a join table.
    mutating func setJoin(_ table: String, source: Int64, target: Int64, present: Bool) {
        if present {
            joins[table, default: JoinRows()].insert(source: source, target: target)
        } else {
            joins[table]?.remove(source: source, target: target)
        }
    }

    private mutating func index(_ ref: ObjectRef, _ row: Row) {
        for (name, target) in row.foreignKeys {
            referrers["\(ref.root).\(name)", default: [:]][target, default: []].insert(ref.key)
        }
        for (slot, key) in uniqueKeys(of: row, root: ref.root) {
            uniqueIndex[slot, default: [:]][key, default: []].insert(ref.key)
        }
    }

    private mutating func unindex(_ ref: ObjectRef, _ row: Row) {
        for (name, target) in row.foreignKeys {
            let slot = "\(ref.root).\(name)"
            referrers[slot]?[target]?.remove(ref.key)
            if referrers[slot]?[target]?.isEmpty == true { referrers[slot]?[target] = nil }
        }
        for (slot, key) in uniqueKeys(of: row, root: ref.root) {
            uniqueIndex[slot]?[key]?.remove(ref.key)
            if uniqueIndex[slot]?[key]?.isEmpty == true { uniqueIndex[slot]?[key] = nil }
        }
    }

    /// The unique keys `row` holds: one per constraint of its entity, unless a part is nil.
    func uniqueKeys(of row: Row, root: String) -> [(String, UniqueKey)] {
        guard let entity = schema[row.entity] else { return [] }
        return UniqueKey.constraints(of: entity).compactMap { constraint in
            UniqueKey(constraint.map(row.value)).map { (UniqueKey.slot(root: root, constraint: constraint), $0) }
        }
    }
}

/// The (source, target) pairs of one join table, indexed both ways.
struct JoinRows: Sendable {
    private(set) var bySource: [Int64: Set<Int64>] = [:]
    private(set) var byTarget: [Int64: Set<Int64>] = [:]

    mutating func insert(source: Int64, target: Int64) {
        bySource[source, default: []].insert(target)
        byTarget[target, default: []].insert(source)
    }

    mutating func remove(source: Int64, target: Int64) {
        bySource[source]?.remove(target)
        if bySource[source]?.isEmpty == true { bySource[source] = nil }
        byTarget[target]?.remove(source)
        if byTarget[target]?.isEmpty == true { byTarget[target] = nil }
    }

    mutating func removeAll(source: Int64) {
        for target in bySource[source] ?? [] { remove(source: source, target: target) }
    }

    mutating func removeAll(target: Int64) {
        for source in byTarget[target] ?? [] { remove(source: source, target: target) }
    }
}
