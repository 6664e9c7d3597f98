import Foundation
import ModelCore

/// What the one save algorithm (``SavePlanning``) asks a backend for: the primitives of reading
/// its stored objects, inside the save's transaction. A backend supplies these and its writes;
/// the semantics — which changes are valid, what collides, what merges, which keys and versions
/// objects get, what history records — are the algorithm's, the same on every backend.
public protocol SaveReads {
    /// The store's schema.
    var schema: ResolvedSchema { get }
    /// The store's UUID, for the identifiers the algorithm makes.
    var storeIdentifier: UUID { get }
    /// The stored object `ref`, or nil if there is none.
    func storedObject(_ ref: ObjectRef) throws -> StoredObject?
    /// The stored objects of hierarchy `root` whose entity has the unique constraint `attributes`
    /// and whose values of it equal `values` (none of them nil), by key.
    func objects(root: String, constraint attributes: [String], equalTo values: [Value]) throws -> [ObjectRef]
    /// The values of `attributes` of the stored object `ref`, nil ones as ``Value/null``.
    func values(of ref: ObjectRef, _ attributes: [AttributeDescription]) throws -> [String: Value]
    /// The last key allocated in hierarchy `root` (0 when none was).
    func lastKey(of root: String) throws -> Int64
}

extension SaveReads {
    /// The stored object `id` names, if it is stored as that entity or a subentity.
    public func existing(_ id: PersistentIdentifier) throws -> (ref: ObjectRef, object: StoredObject)? {
        guard let key = id.primaryKey, let root = schema[id.entityName]?.root else { return nil }
        let ref = ObjectRef(root: root, key: key)
        guard let object = try storedObject(ref), schema[object.entity]?.isKind(of: id.entityName) ?? false else {
            return nil
        }
        return (ref, object)
    }

    /// The permanent identifier of object `key` of `entity`.
    public func permanent(_ entity: String, _ key: Int64) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }
}
