import Foundation
import ModelCore

/// What an overlay (a context's pending changes, read as if saved) puts in front of the stored
/// rows, worked out once for both SQL backends: inserted objects get the keys a save would give
/// them (after each hierarchy's sequence, in change-set order); updated objects are their
/// stored row with these columns changed and the version grown by one; deleted objects are
/// hidden; join rows are added or removed. Each backend writes it into tables of its own and
/// shadows its tables with them (SQLite's OverlayTables, PostgreSQL's PostgresOverlay).
package struct OverlayContent {
    package struct Row {
        package let root: String
        package let entity: ResolvedEntity
        package let key: Int64
        /// Attribute values and stored foreign keys, sorted by column.
        package let columns: [(String, Value)]
    }

    /// The key each inserted object gets, by temporary UUID.
    package private(set) var temporaryKeys: [UUID: Int64] = [:]
    /// The temporary identifier of each inserted object, by hierarchy and key.
    package private(set) var temporaryIDs: [String: [Int64: PersistentIdentifier]] = [:]
    package private(set) var inserts: [Row] = []
    /// Updated objects: the columns that change.
    package private(set) var updates: [Row] = []
    package let deletes: [ObjectRef]
    /// The join rows of each join table the overlay adds (`true`) or removes (`false`), the last
    /// change of a pair deciding.
    package private(set) var joinRows: [String: [JoinPair: Bool]] = [:]
    /// The hierarchies the overlay changes, in the order first changed.
    package private(set) var changedRoots: [String] = []
    /// The hierarchies it deletes objects of.
    package let deletedRoots: Set<String>

    package struct JoinPair: Hashable {
        package let source: Int64
        package let target: Int64
    }

    /// `plan` (checked as an overlay) laid out; `sequence` reads a hierarchy's last key.
    package init(_ plan: ChangeSetPlan, sequence: (String) throws -> Int64) throws {
        deletes = plan.deletes
        deletedRoots = Set(plan.deletes.map(\.root))
        var keys: [Int64] = []
        var next: [String: Int64] = [:]
        for insert in plan.inserts {
            let root = insert.entity.root
            let key = try (next[root] ?? sequence(root)) + 1
            next[root] = key
            keys.append(key)
            if case .temporary(let uuid) = insert.id.key { temporaryKeys[uuid] = key }
            temporaryIDs[root, default: [:]][key] = insert.id
        }
        func key(_ participant: ChangeSetPlan.Participant) -> Int64 {
            switch participant {
            case .stored(let ref): ref.key
            case .inserted(let index): keys[index]
            }
        }
        func columns(_ values: [String: Value], _ links: [ChangeSetPlan.Link]) -> [(String, Value)] {
            var columns = values
            for link in links where link.relationship.storage == .foreignKey {
                if case .toOne(let target) = link.kind {
                    columns[link.relationship.name] = target.map { .int(key($0)) } ?? .null
                }
            }
            return columns.sorted { $0.key < $1.key }
        }
        func touch(_ root: String) { if !changedRoots.contains(root) { changedRoots.append(root) } }
        func link(_ owner: Int64, _ links: [ChangeSetPlan.Link]) {
            for link in links {
                guard case .joinTable(let table, true) = link.relationship.storage,
                    case .toMany(let added, let removed) = link.kind
                else { continue }
                for target in removed.map(key) {
                    joinRows[table.name, default: [:]][JoinPair(source: owner, target: target)] = false
                }
                for target in added.map(key) {
                    joinRows[table.name, default: [:]][JoinPair(source: owner, target: target)] = true
                }
            }
        }
        for (index, insert) in plan.inserts.enumerated() {
            touch(insert.entity.root)
            inserts.append(
                Row(
                    root: insert.entity.root, entity: insert.entity, key: keys[index],
                    columns: columns(insert.attributes, insert.links)))
        }
        for update in plan.updates {
            touch(update.ref.root)
            updates.append(
                Row(
                    root: update.ref.root, entity: update.entity, key: update.ref.key,
                    columns: columns(update.attributes, update.links)))
        }
        for (index, insert) in plan.inserts.enumerated() { link(keys[index], insert.links) }
        for update in plan.updates { link(update.ref.key, update.links) }
        for ref in plan.deletes { touch(ref.root) }
    }
}
