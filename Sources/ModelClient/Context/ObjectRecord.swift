import ModelCore

/// What a context knows of one object: its stored values as last saved or fetched, its
/// relationships as they are now, and what changed. The object itself is held weakly (a context
/// doesn't keep unchanged objects alive), strongly while it has unsaved changes; the record stays,
/// so related objects can be made again from it.
final class ObjectRecord {
    enum Lifecycle {
        /// In the store (as far as the context knows).
        case persisted
        /// Inserted by the context, not yet saved: its identifier is temporary.
        case inserted
    }

    var id: PersistentIdentifier
    let info: ModelTypeInfo
    weak var object: AnyObject?
    /// Models of inserts a save merged into this object (upserts): they read this record as
    /// `object` does, and a value set on one is set on all.
    var joined: [Joined] = []
    struct Joined {
        weak var object: AnyObject?
    }
    /// Runs `body` with `object` and each joined model still alive.
    func forEachObject(_ body: (AnyObject) -> Void) {
        if let object { body(object) }
        for model in joined { if let object = model.object { body(object) } }
    }
    /// `object`, or a joined model still alive.
    var anyObject: AnyObject? { object ?? joined.lazy.compactMap(\.object).first }
    /// The object, held while it has unsaved changes.
    var pinned: AnyObject?
    /// The version the values were read at (``ObjectSnapshot/version``), which a save of a
    /// change to the object expects the store to hold still; nil when not known (never read, or
    /// changed by a save since: the unit of work knows the version it saved).
    var version: Int64?
    /// Whether the attribute values are known (false for an object only referred to so far).
    var isLoaded: Bool
    /// Attribute values as last saved or fetched.
    var attributes: [String: Value]
    /// Attributes a fetch with `propertiesToFetch` left out, not read since.
    var unfetched: Set<String> = []
    /// Relationship targets as they are now, to-one ones as zero or one identifier.
    var relationships: [String: [PersistentIdentifier]]
    /// Relationships as they were before the unsaved changes (for rollback).
    var savedRelationships: [String: [PersistentIdentifier]] = [:]
    var lifecycle: Lifecycle = .persisted
    /// Marked for deletion (not yet saved).
    var isMarkedDeleted = false
    /// Properties changed directly since the last save.
    var changed: Set<String> = []
    /// Changed properties not yet sent to the context's unit of work, each with the change's
    /// generation (a change made while a save is under way stays unsent).
    var unsent: [String: UInt64] = [:]
    /// Relationships changed as the inverse of another object's change (never sent: the store
    /// keeps inverses itself).
    var derived: Set<String> = []
    /// Attribute values sent to the unit of work and not yet saved.
    var sentAttributes: [String: Value] = [:]
    var insertSent = false
    var deleteSent = false
    /// Deleted by a save, or dropped by a rollback: no longer in the context.
    var isDetached = false

    init(
        id: PersistentIdentifier, info: ModelTypeInfo, isLoaded: Bool,
        attributes: [String: Value] = [:], relationships: [String: [PersistentIdentifier]] = [:]
    ) {
        self.id = id
        self.info = info
        self.isLoaded = isLoaded
        self.attributes = attributes
        self.relationships = relationships
    }

    var hasChanges: Bool {
        !isDetached && (lifecycle == .inserted || isMarkedDeleted || !changed.isEmpty || !derived.isEmpty)
    }

    /// The message for reading an attribute a fetch with `propertiesToFetch` left out.
    func unfetchedMessage(reading name: String) -> String {
        "\(info.entityName).\(name) of \(id) was not fetched: the fetch that brought the object named propertiesToFetch without it. "
            + "Call `try await context.load(_:)` on the object (or fetch it without propertiesToFetch) before reading it"
    }

    /// The message for reading a property of an object whose values this context never loaded.
    func faultMessage(reading name: String) -> String {
        "\(info.entityName).\(name) of \(id) is not loaded: this context only knows the object from a relationship of another. "
            + "Fetch it (or fetch with relationshipKeyPathsForPrefetching for the relationship that leads to it), or call "
            + "`try await context.load(_:)` on it, before reading its properties"
    }
}

extension ObjectSnapshot {
    /// Relationship values as lists of identifiers.
    var relationshipIDs: [String: [PersistentIdentifier]] {
        relationships.mapValues { value in
            switch value {
            case .toOne(let id): id.map { [$0] } ?? []
            case .toMany(let ids): ids
            }
        }
    }
}
