import Foundation
import ModelCore

/// Reading objects by identifier, as every table-per-hierarchy backend does: the identifiers
/// become keys by hierarchy (refusing those of another store or entity), the backend reads the
/// rows, and each identifier gets back its row when the stored entity is the identifier's or
/// one of its subentities.
public enum ObjectLookup {
    /// The keys `ids` name, by hierarchy root; `invalidIdentifier` for one of another store,
    /// `unknownEntity` for an entity the schema does not have. Temporary identifiers name none.
    public static func keysByRoot(_ ids: [PersistentIdentifier], schema: ResolvedSchema, storeIdentifier: UUID)
        throws(ModelError) -> [String: Set<Int64>]
    {
        var keys: [String: Set<Int64>] = [:]
        for id in ids {
            if let (root, key) = try rootAndKey(id, schema: schema, storeIdentifier: storeIdentifier) {
                keys[root, default: []].insert(key)
            }
        }
        return keys
    }

    /// One identifier's part of ``keysByRoot(_:schema:storeIdentifier:)``: its hierarchy's root
    /// entity and its key, nil for a temporary identifier; throws as that does.
    public static func rootAndKey(_ id: PersistentIdentifier, schema: ResolvedSchema, storeIdentifier: UUID)
        throws(ModelError) -> (root: String, key: Int64)?
    {
        guard id.storeIdentifier == storeIdentifier else {
            throw ModelError(
                .invalidIdentifier,
                "\(id) belongs to store \(id.storeIdentifier.uuidString.lowercased()), not to this store (\(storeIdentifier.uuidString.lowercased()))",
                context: ["uri": id.uriRepresentation])
        }
        let entity = try schema.entity(id.entityName)
        return id.primaryKey.map { (entity.root, $0) }
    }

    /// The snapshot `id` names in `found` (by hierarchy and key), if its stored entity is the
    /// identifier's entity or a subentity of it.
    public static func match(
        _ id: PersistentIdentifier, in found: [String: [Int64: ObjectSnapshot]], schema: ResolvedSchema
    ) -> ObjectSnapshot? {
        guard let key = id.primaryKey, let root = schema[id.entityName]?.root, let snapshot = found[root]?[key],
            schema[snapshot.id.entityName]?.isKind(of: id.entityName) ?? false
        else { return nil }
        return snapshot
    }
}

extension ChangeSet {
    /// The keys of the saved objects the change set updates, deletes or relates to, by
    /// hierarchy root: the rows a save reads up front.
    public func savedKeysByRoot(in schema: ResolvedSchema) -> [String: Set<Int64>] {
        var keys: [String: Set<Int64>] = [:]
        func note(_ id: PersistentIdentifier) {
            if let key = id.primaryKey, let root = schema[id.entityName]?.root { keys[root, default: []].insert(key) }
        }
        updates.forEach { note($0.id) }
        deletes.forEach { note($0.id) }
        for relationships in inserts.map(\.relationships) + updates.map(\.relationships) {
            for change in relationships.values {
                switch change {
                case .toOne(let target): target.map(note)
                case .toMany(let added, _): added.forEach(note)
                }
            }
        }
        return keys
    }
}
