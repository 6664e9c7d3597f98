import Foundation
import ModelCore
import ModelStorage

/// What a save or an overlay reads of a memory store's state (``SaveReads``).
struct MemoryReads: SaveReads {
    let state: MemoryState
    let storeIdentifier: UUID

    var schema: ResolvedSchema { state.schema }

    func storedObject(_ ref: ObjectRef) -> StoredObject? {
        state.row(ref).map { StoredObject(entity: $0.entity, version: $0.version) }
    }

    /// Through the state's unique index, whose buckets are confirmed value by value.
    func objects(root: String, constraint attributes: [String], equalTo values: [Value]) -> [ObjectRef] {
        guard let key = UniqueKey(values) else { return [] }
        return (state.uniqueIndex[UniqueKey.slot(root: root, constraint: attributes)]?[key] ?? []).sorted().compactMap {
            pk in
            let ref = ObjectRef(root: root, key: pk)
            guard let row = state.row(ref), UniqueKey.sameValues(attributes.map(row.value), values) else { return nil }
            return ref
        }
    }

    func values(of ref: ObjectRef, _ attributes: [AttributeDescription]) -> [String: Value] {
        guard let row = state.row(ref) else { return [:] }
        var values: [String: Value] = [:]
        for attribute in attributes { values[attribute.name] = row.value(attribute.name) }
        return values
    }

    func lastKey(of root: String) -> Int64 {
        state.sequences[root] ?? 0
    }
}

extension MemoryState {
    /// Applies what a save computed: rows, then join pairs, then deletes (which also remove their
    /// join pairs), then the hierarchies' last keys. It cannot fail.
    mutating func apply(_ writes: SaveWrites) {
        for insert in writes.inserted {
            var row = Row(entity: insert.entity, version: 1, attributes: [:], foreignKeys: [:])
            set(insert.values, on: &row)
            write(insert.ref, row)
        }
        for update in writes.updated {
            guard var row = row(update.ref) else { continue }
            set(update.values, on: &row)
            row.version += 1
            write(update.ref, row)
        }
        for join in writes.joins {
            setJoin(join.table, source: join.source.key, target: join.target.key, present: join.present)
        }
        for (ref, _) in writes.deletes { remove(ref) }
        for (root, key) in writes.lastKeys { sequences[root] = max(sequences[root] ?? 0, key) }
    }

    /// Sets attribute values (null clears) and foreign keys (by relationship name) on `row`.
    private func set(_ values: [String: Value], on row: inout Row) {
        let entity = schema[row.entity]
        for (name, value) in values {
            if entity?.attribute(name) != nil {
                row.attributes[name] = value.isNull ? nil : value
            } else if case .int(let key) = value {
                row.foreignKeys[name] = key
            } else {
                row.foreignKeys[name] = nil
            }
        }
    }
}
