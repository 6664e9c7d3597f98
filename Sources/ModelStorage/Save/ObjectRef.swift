import Foundation
import ModelCore

/// A stored object as a backend names it: its hierarchy (root entity) and its primary key.
public struct ObjectRef: Hashable, Sendable {
    public let root: String
    public let key: Int64

    public init(root: String, key: Int64) {
        self.root = root
        self.key = key
    }

    /// Hashes the key alone: a save's objects mostly share one hierarchy, so hashing the root's
    /// name too would cost more than the rare shared key between hierarchies.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
    }
}

/// What a backend holds of a stored object that a save needs: its concrete entity and version.
public struct StoredObject: Hashable, Sendable {
    public let entity: String
    public let version: Int64

    public init(entity: String, version: Int64) {
        self.entity = entity
        self.version = version
    }
}

/// An object as a save sees it: stored already, or the `index`th insert of the change set.
public enum SaveParticipant: Hashable, Sendable {
    case stored(ObjectRef)
    case inserted(Int)
}
