/// A change to a relationship within a save.
public enum RelationshipChange: Hashable, Sendable {
    /// The to-one target becomes this (nil to clear it).
    case toOne(PersistentIdentifier?)
    /// Objects added to and removed from a to-many relationship.
    case toMany(added: [PersistentIdentifier], removed: [PersistentIdentifier])
}

/// An object to insert. It carries a temporary identifier and every attribute value (defaults
/// already applied by the context).
public struct InsertedObject: Hashable, Sendable {
    public var id: PersistentIdentifier
    public var attributes: [String: Value]
    public var relationships: [String: RelationshipChange]

    public init(
        id: PersistentIdentifier, attributes: [String: Value] = [:], relationships: [String: RelationshipChange] = [:]
    ) {
        self.id = id
        self.attributes = attributes
        self.relationships = relationships
    }
}

/// Changed values of a saved object, and the version the change was based on.
public struct UpdatedObject: Hashable, Sendable {
    public var id: PersistentIdentifier
    /// Only the attributes that changed.
    public var attributes: [String: Value]
    /// Only the relationships that changed.
    public var relationships: [String: RelationshipChange]
    /// The version the context read; the save fails with a conflict if the stored version
    /// differs. Nil skips the check (for the other side of a relationship change).
    public var expectedVersion: Int64?
    /// Whether the update only keeps the inverse side of relationships the change set changes
    /// on their other side (the context did not change the object itself). Such an update of an
    /// object another save deleted is left out: what it would undo is gone with the object,
    /// where any other update of a missing object fails with `notFound`.
    public var keepsInversesOnly = false

    public init(
        id: PersistentIdentifier, attributes: [String: Value] = [:],
        relationships: [String: RelationshipChange] = [:], expectedVersion: Int64? = nil
    ) {
        self.id = id
        self.attributes = attributes
        self.relationships = relationships
        self.expectedVersion = expectedVersion
    }

    /// The names of the changed attributes and relationships, sorted.
    public var changedProperties: [String] {
        (Array(attributes.keys) + Array(relationships.keys)).sorted()
    }
}

/// An object to delete.
public struct DeletedObject: Hashable, Sendable {
    public var id: PersistentIdentifier
    /// As for updates: the version the context read, or nil to skip the check.
    public var expectedVersion: Int64?

    public init(id: PersistentIdentifier, expectedVersion: Int64? = nil) {
        self.id = id
        self.expectedVersion = expectedVersion
    }
}

/// What to do when an insert matches an existing object on a unique constraint.
public enum UniquenessPolicy: String, Hashable, Sendable, Codable, CaseIterable {
    /// Fail the save with `uniqueConstraint`.
    case error
    /// Update the existing object with the inserted values instead, as SwiftData's `#Unique` does;
    /// the insert's temporary identifier maps to the existing object.
    case upsert
}

/// Everything one save writes, atomically. The context builds it complete and consistent: both
/// sides of every relationship change, delete rules already applied. Backends store the side of
/// each relationship that is kept (``ResolvedRelationship/isStoredHere``).
public struct ChangeSet: Hashable, Sendable {
    public var inserts: [InsertedObject]
    public var updates: [UpdatedObject]
    public var deletes: [DeletedObject]
    /// Stamped on the history transaction.
    public var author: String?
    /// The user who saved, stamped on the history transaction beside the author: the daemon's
    /// caller, as the kernel reports it (``savingUser``); nil in a process of its own.
    public var user: String?
    public var uniquenessPolicy: UniquenessPolicy

    /// The user the current task saves for: the daemon sets it around each call (its caller's
    /// Unix user), and every change set made meanwhile carries it.
    @TaskLocal public static var savingUser: String?

    public init(
        inserts: [InsertedObject] = [], updates: [UpdatedObject] = [], deletes: [DeletedObject] = [],
        author: String? = nil, uniquenessPolicy: UniquenessPolicy = .error, user: String? = ChangeSet.savingUser
    ) {
        self.inserts = inserts
        self.updates = updates
        self.deletes = deletes
        self.author = author
        self.user = user
        self.uniquenessPolicy = uniquenessPolicy
    }

    /// Whether the save would write nothing.
    public var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
}

/// What a save did.
public struct SaveResult: Hashable, Sendable {
    /// Every inserted object's temporary identifier, mapped to its permanent one.
    public var remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier]
    /// The new version of every inserted or updated object (by permanent identifier).
    public var versions: [PersistentIdentifier: Int64]
    /// The history transaction the save wrote; nil if the change set was empty.
    public var token: HistoryToken?
    /// The entities of the objects that transaction records (what live queries look at again);
    /// empty when not known.
    public var touchedEntities: Set<String> = []
    /// Objects inserted from ``InsertRun``s, which had no temporary identifiers: their keys and
    /// the identifiers an answer maps (``InsertedRun/identifiers(_:)``), rather than entries of
    /// ``remappedIdentifiers``. Their versions are 1.
    public var insertedRuns: [InsertedRun] = []

    public init(
        remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier] = [:],
        versions: [PersistentIdentifier: Int64] = [:], token: HistoryToken? = nil
    ) {
        self.remappedIdentifiers = remappedIdentifiers
        self.versions = versions
        self.token = token
    }
}

/// Thrown by a backend's save when objects changed since the versions the change set expected.
/// Nothing was written. The context resolves it with its merge policy.
public struct SaveConflicts: Error, Hashable, Sendable {
    public struct Conflict: Hashable, Sendable {
        public var id: PersistentIdentifier
        public var expectedVersion: Int64
        /// The object as it is now, or nil if it was deleted.
        public var current: ObjectSnapshot?

        public init(id: PersistentIdentifier, expectedVersion: Int64, current: ObjectSnapshot?) {
            self.id = id
            self.expectedVersion = expectedVersion
            self.current = current
        }
    }

    public var conflicts: [Conflict]

    public init(_ conflicts: [Conflict]) { self.conflicts = conflicts }
}
