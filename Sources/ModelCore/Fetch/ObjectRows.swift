import Synchronization

/// The shape of one entity's objects as a read returns them: the names of the attributes and
/// of the to-one relationships it returns, in the order an ``ObjectRow`` holds their values. A
/// read makes one per entity and hands the same one with each object of that entity, so that a
/// sink can keep what it derives from the names (their encoded bytes) for as long as the shape
/// is the same object.
public final class ObjectShape: Sendable {
    public let entityName: String
    public let attributeNames: [String]
    public let toOneNames: [String]
    /// What a sink made of the names, kept for its next read of the shape (``derived(_:)``).
    private let kept = Mutex<(any AnyObject & Sendable)?>(nil)

    public init(entityName: String, attributeNames: [String], toOneNames: [String]) {
        self.entityName = entityName
        self.attributeNames = attributeNames
        self.toOneNames = toOneNames
    }

    /// What `make` makes of this shape, made by the first caller and kept with the shape for the
    /// next (a wire encoder's encoded names: a point read made them for every answer, at a
    /// tenth of its cost). Readers keep their shapes as long as the schema is loaded.
    public func derived<Derived: AnyObject & Sendable>(_ make: (ObjectShape) -> Derived) -> Derived {
        kept.withLock { kept in
            if let known = kept as? Derived { return known }
            let made = make(self)
            kept = made
            return made
        }
    }
}

/// One object as a read finds it, its values in its shape's order: what an ``ObjectRowSink``
/// takes instead of an ``ObjectSnapshot``, whose two tables by name cost more to build and to
/// free than a small read itself. The reader reuses the arrays from row to row.
public struct ObjectRow {
    public var id: PersistentIdentifier
    public var version: Int64
    public var shape: ObjectShape
    /// The value of each of `shape.attributeNames`, in order (``Value/null`` when absent).
    public var attributes: [Value]
    /// The target of each of `shape.toOneNames`, in order (nil when not set).
    public var toOne: [PersistentIdentifier?]

    public init(
        id: PersistentIdentifier, version: Int64, shape: ObjectShape, attributes: [Value],
        toOne: [PersistentIdentifier?]
    ) {
        self.id = id
        self.version = version
        self.shape = shape
        self.attributes = attributes
        self.toOne = toOne
    }

    /// The snapshot of the same object.
    public var snapshot: ObjectSnapshot {
        var values: [String: Value] = [:]
        for (name, value) in zip(shape.attributeNames, attributes) { values[name] = value }
        var relationships: [String: RelationshipValue] = [:]
        for (name, target) in zip(shape.toOneNames, toOne) { relationships[name] = .toOne(target) }
        return ObjectSnapshot(id: id, version: version, attributes: values, relationships: relationships)
    }
}

/// Takes the objects a read finds as it reads them, in the read's order: as rows when the
/// backend reads them that way (``ObjectRow``), as snapshots otherwise. For answers written
/// as bytes, where building a snapshot per object is most of a small read's cost. Each `add`
/// says whether the sink takes more: when it does not, the read stops there and is given up
/// (its caller reads again the usual way).
public protocol ObjectRowSink {
    mutating func add(_ row: ObjectRow) -> Bool
    mutating func add(_ snapshot: ObjectSnapshot) -> Bool
    /// An object read as a row whose attribute values the sink asks for one at a time, by their
    /// index in `shape.attributeNames`, each once, in order (``RowCell``): a reader hands a
    /// row's columns over this way without making a value of each. By default, the row made of
    /// the cells' values (``add(_:)-(ObjectRow)``).
    mutating func add(
        id: PersistentIdentifier, version: Int64, shape: ObjectShape, toOne: [PersistentIdentifier?],
        cells: (Int) -> RowCell
    ) -> Bool
}

extension ObjectRowSink {
    public mutating func add(
        id: PersistentIdentifier, version: Int64, shape: ObjectShape, toOne: [PersistentIdentifier?],
        cells: (Int) -> RowCell
    ) -> Bool {
        let attributes = (0..<shape.attributeNames.count).map { cells($0).value }
        return add(ObjectRow(id: id, version: version, shape: shape, attributes: attributes, toOne: toOne))
    }

    /// Hands over `snapshots` while the sink takes more; whether it took them all and takes more.
    public mutating func add(_ snapshots: [ObjectSnapshot]) -> Bool {
        for snapshot in snapshots where !add(snapshot) { return false }
        return true
    }
}
