import Foundation

/// Plain inserts of one entity (no relationships, no identifiers chosen by the caller), their
/// attribute values held column by column rather than in a table per object: what a bulk load
/// sends. The daemon reads such inserts of an `Apply` straight into runs, and a backend that can
/// writes them row by row as they are (``ModelContainer/saveInsertRuns``), without a temporary
/// identifier, a hashed table of values and a remap entry per object.
public struct InsertRun: Hashable, Sendable {
    public let entityName: String
    /// The attributes the values are for, each named once.
    public let columns: [String]
    /// The values, row after row: `columns.count` of them per object.
    public private(set) var values: [Value]
    /// How many objects the run inserts.
    public private(set) var count: Int

    public init(entityName: String, columns: [String]) {
        self.entityName = entityName
        self.columns = columns
        values = []
        count = 0
    }

    /// Appends one object: a value per column, in the columns' order.
    public mutating func append(row: some Collection<Value>) {
        precondition(row.count == columns.count, "a row of \(row.count) values for \(columns.count) columns")
        values.append(contentsOf: row)
        count += 1
    }

    /// Appends one object whose value for column `index` is `value(index)`, without a
    /// collection of them first.
    public mutating func appendRow(_ value: (_ index: Int) -> Value) {
        for index in 0..<columns.count { values.append(value(index)) }
        count += 1
    }

    /// Room for `objects` more objects.
    public mutating func reserveCapacity(objects: Int) {
        values.reserveCapacity(values.count + objects * columns.count)
    }

    /// The values of the object at `index`, in the columns' order.
    public func row(_ index: Int) -> ArraySlice<Value> {
        values[index * columns.count..<(index + 1) * columns.count]
    }

    /// The object at `index` as a table of values by attribute name.
    public func attributes(ofRow index: Int) -> [String: Value] {
        Dictionary(uniqueKeysWithValues: zip(columns, row(index)))
    }
}

/// Objects a save inserted from an ``InsertRun``: consecutive primary keys of one entity. Their
/// temporary identifiers were never made by the caller; ``identifiers(_:)`` makes one per object
/// from ``temporaryBase``, so that a save's answer can map each to its permanent identifier as
/// it does for other inserts.
public struct InsertedRun: Hashable, Sendable {
    public let storeIdentifier: UUID
    public let entityName: String
    public let firstKey: Int64
    public let count: Int
    /// A random UUID the objects' temporary UUIDs are made from (its last six bytes made
    /// distinct by the object's index).
    public let temporaryBase: UUID

    public init(storeIdentifier: UUID, entityName: String, firstKey: Int64, count: Int, temporaryBase: UUID = .random())
    {
        self.storeIdentifier = storeIdentifier
        self.entityName = entityName
        self.firstKey = firstKey
        self.count = count
        self.temporaryBase = temporaryBase
    }

    /// The permanent identifier of the run's first object.
    public var firstIdentifier: PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(firstKey))
    }

    /// Calls `body` with each object's temporary and permanent identifier, in insertion order.
    public func identifiers(_ body: (_ temporary: PersistentIdentifier, _ permanent: PersistentIdentifier) -> Void) {
        for index in 0..<count {
            body(
                PersistentIdentifier(
                    storeIdentifier: storeIdentifier, entityName: entityName, key: .temporary(temporaryUUID(index))),
                PersistentIdentifier(
                    storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(firstKey + Int64(index))))
        }
    }

    /// The temporary UUID of the object at `index`: the base with its node bytes (the last
    /// six, outside the version and variant bits) XORed with the index, so distinct per object.
    private func temporaryUUID(_ index: Int) -> UUID {
        var bytes = temporaryBase.uuid
        withUnsafeMutableBytes(of: &bytes) { raw in
            var mixed = UInt64(index)
            for offset in stride(from: 15, through: 10, by: -1) {
                raw[offset] ^= UInt8(truncatingIfNeeded: mixed)
                mixed >>= 8
            }
        }
        return UUID(uuid: bytes)
    }
}
