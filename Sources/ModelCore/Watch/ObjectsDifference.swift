/// How a watched fetch's objects changed from one result to the next, in the shape of Swift's
/// `CollectionDifference` (with moves inferred) plus the objects whose values changed. Applied
/// to the old result (``applied(to:)``), it gives the new one:
/// 1. remove every deleted object and every moved object at its old offset, highest first;
/// 2. insert every inserted object and every moved object at its new offset, lowest first;
/// 3. replace every updated object at its new offset.
public struct ObjectsDifference: Hashable, Sendable {
    public struct Insertion: Hashable, Sendable {
        /// Where the object is in the new result.
        public var offset: Int
        public var object: ObjectSnapshot

        public init(offset: Int, object: ObjectSnapshot) {
            self.offset = offset
            self.object = object
        }
    }

    public struct Deletion: Hashable, Sendable {
        /// Where the object was in the old result.
        public var offset: Int
        public var id: PersistentIdentifier

        public init(offset: Int, id: PersistentIdentifier) {
            self.offset = offset
            self.id = id
        }
    }

    public struct Update: Hashable, Sendable {
        /// Where the object is in the new result.
        public var offset: Int
        public var object: ObjectSnapshot
        /// The attributes and relationships whose values changed, sorted.
        public var changedProperties: [String]

        public init(offset: Int, object: ObjectSnapshot, changedProperties: [String]) {
            self.offset = offset
            self.object = object
            self.changedProperties = changedProperties
        }
    }

    public struct Move: Hashable, Sendable {
        public var id: PersistentIdentifier
        /// Where the object was in the old result, and where it is in the new one.
        public var from: Int
        public var to: Int

        public init(id: PersistentIdentifier, from: Int, to: Int) {
            self.id = id
            self.from = from
            self.to = to
        }
    }

    public var inserted: [Insertion] = []
    public var deleted: [Deletion] = []
    public var updated: [Update] = []
    public var moved: [Move] = []

    public init(inserted: [Insertion] = [], deleted: [Deletion] = [], updated: [Update] = [], moved: [Move] = []) {
        self.inserted = inserted
        self.deleted = deleted
        self.updated = updated
        self.moved = moved
    }

    public var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && updated.isEmpty && moved.isEmpty }

    /// The difference that turns `old` into `new`. Objects are told apart by identifier; one in
    /// both whose values differ is updated.
    public init(from old: [ObjectSnapshot], to new: [ObjectSnapshot]) {
        let changes = new.map(\.id).difference(from: old.map(\.id)).inferringMoves()
        for change in changes {
            switch change {
            case .remove(let offset, let id, let associated):
                if let associated {
                    moved.append(Move(id: id, from: offset, to: associated))
                } else {
                    deleted.append(Deletion(offset: offset, id: id))
                }
            case .insert(let offset, _, let associated):
                if associated == nil { inserted.append(Insertion(offset: offset, object: new[offset])) }
            }
        }
        var oldByID: [PersistentIdentifier: ObjectSnapshot] = [:]
        oldByID.reserveCapacity(old.count)
        for object in old { oldByID[object.id] = object }
        for (offset, object) in new.enumerated() {
            guard let before = oldByID[object.id], before != object else { continue }
            updated.append(
                Update(offset: offset, object: object, changedProperties: Self.changedProperties(before, object)))
        }
        deleted.sort { $0.offset < $1.offset }
        inserted.sort { $0.offset < $1.offset }
        moved.sort { $0.to < $1.to }
    }

    /// The names of the attributes and relationships whose values differ, sorted.
    static func changedProperties(_ old: ObjectSnapshot, _ new: ObjectSnapshot) -> [String] {
        var names = Set<String>()
        for name in Set(old.attributes.keys).union(new.attributes.keys)
        where old.attributes[name] != new.attributes[name] {
            names.insert(name)
        }
        for name in Set(old.relationships.keys).union(new.relationships.keys)
        where old.relationships[name] != new.relationships[name] {
            names.insert(name)
        }
        return names.sorted()
    }

    /// `old` with the difference applied: the new result.
    public func applied(to old: [ObjectSnapshot]) -> [ObjectSnapshot] {
        var objects = old
        var movedObjects: [PersistentIdentifier: ObjectSnapshot] = [:]
        let removals =
            deleted.map { ($0.offset, false) } + moved.map { ($0.from, true) }
        for (offset, isMove) in removals.sorted(by: { $0.0 > $1.0 }) {
            let object = objects.remove(at: offset)
            if isMove { movedObjects[object.id] = object }
        }
        let insertions =
            inserted.map { ($0.offset, $0.object) }
            + moved.compactMap { move in movedObjects[move.id].map { (move.to, $0) } }
        for (offset, object) in insertions.sorted(by: { $0.0 < $1.0 }) {
            objects.insert(object, at: offset)
        }
        for update in updated { objects[update.offset] = update.object }
        return objects
    }
}
