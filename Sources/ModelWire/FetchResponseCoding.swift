import Foundation
import ModelCore
import Synchronization

/// One response of a fetch, in ModelCore's types: what `modeld.v1.FetchResponse` carries.
public struct FetchChunk: Sendable, Equatable {
    public var objects: [ObjectSnapshot] = []
    public var prefetched: [ObjectSnapshot] = []
    public var identifiers: [PersistentIdentifier] = []
    /// The number of results in all (the last response only).
    public var count: Int?

    public init() {}

    /// Reads a response message; with `store`, every URI must be one of that store's.
    public init(wire: Modeld_V1_FetchResponse, in store: UUID? = nil) throws(ModelError) {
        for object in wire.objects { objects.append(try ObjectSnapshot(wire: object, in: store)) }
        for object in wire.prefetched { prefetched.append(try ObjectSnapshot(wire: object, in: store)) }
        for uri in wire.identifiers { identifiers.append(try PersistentIdentifier(wire: uri, in: store)) }
        count = wire.hasCount ? Int(wire.count) : nil
    }

    /// Reads a serialized `FetchResponse` straight into ModelCore's types, without building the
    /// message, its maps and their `Value` messages first (``FetchResponseEncoder``'s reverse).
    /// It reads what any protobuf writer writes: fields in any order, unknown fields skipped.
    /// With `store`, every URI must be one of that store's, as ``init(wire:in:)`` checks them.
    /// With `shapes`, the objects are read into copies of the last objects `shapes` saw (a
    /// point read's one object as much as a query's fifty) rather than into tables built from
    /// nothing.
    public init(serialized bytes: [UInt8], in store: UUID? = nil, shapes: SnapshotShapes? = nil) throws(ModelError) {
        self = try bytes.withUnsafeBufferPointer { (bytes) throws(ModelError) in
            try FetchChunk(serialized: UnsafeRawBufferPointer(bytes), in: store, shapes: shapes)
        }
    }

    /// ``init(serialized:in:shapes:)`` from bytes valid while it runs (a blocking connection's
    /// buffer), not copied first.
    public init(serialized bytes: UnsafeRawBufferPointer, in store: UUID? = nil, shapes: SnapshotShapes? = nil)
        throws(ModelError)
    {
        var snapshots = shapes?.take(store: store) ?? SnapshotReader(store: store)
        self = try ProtobufReader.reading(bytes) { (reader) throws(ModelError) in
            var chunk = FetchChunk()
            var uriPrefix: PersistentIdentifier.URIPrefix?
            while let (field, type) = try reader.tag() {
                switch (field, type) {
                case (1, 2):
                    let object = try reader.message()
                    // Room for as many objects as there are left of this one's size (those of
                    // an answer are alike): grown from nothing, fifty were copied six times.
                    if chunk.objects.isEmpty {
                        chunk.objects.reserveCapacity(min(reader.remaining / (object.remaining + 2) + 1, 4_096))
                    }
                    chunk.objects.append(try snapshots.object(object))
                case (2, 2): chunk.prefetched.append(try snapshots.object(reader.message()))
                case (3, 2): chunk.identifiers.append(try reader.identifier(store: store, prefix: &uriPrefix))
                case (4, 0): chunk.count = Int(truncatingIfNeeded: Int64(bitPattern: try reader.varint()))
                default: try reader.skip(type)
                }
            }
            return chunk
        }
        shapes?.keep(snapshots)
    }
}

/// The shapes of the objects a connection last read (``SnapshotReader``'s tables of names), kept
/// from one answer to the next: a client reads the same few entities again and again. Safe to
/// share between tasks: a read takes them for its length, and one that finds them taken reads
/// without them.
public final class SnapshotShapes: Sendable {
    private let kept = Mutex<SnapshotReader?>(nil)

    public init() {}

    /// The kept shapes if they are there and for `store`, else a reader with none.
    func take(store: UUID?) -> SnapshotReader {
        if let reader = kept.withLock({ kept in kept.take() }), reader.store == store { return reader }
        return SnapshotReader(store: store)
    }

    /// Keeps `reader`'s shapes for the next read.
    func keep(_ reader: SnapshotReader) {
        kept.withLock { $0 = reader }
    }
}

/// Writes `modeld.v1.FetchResponse` bytes straight from ModelCore's types, as SwiftProtobuf
/// would write the message built from them (``FetchChunk/init(serialized:)`` reads them back):
/// building the message first — an `ObjectSnapshot` message per object, a `Value` message per
/// attribute, maps sized and then written — cost the daemon more than a small query itself.
public struct FetchResponseEncoder: ObjectRowSink, Sendable {
    private var writer = ProtobufWriter()
    /// The names of the last shape of rows written.
    private var names: ShapeNames?
    /// Objects written from rows since the answer began.
    private var rowObjects = 0
    /// How many objects the answer will likely hold (a fetch's limit): it starts with room for
    /// that many objects of their shape's size so far, up to 16 KB. Grown from a few hundred
    /// bytes as it was written, a 50-object answer was made again four times.
    public var expectedObjects = 1

    public init() {}

    /// The bytes written so far.
    public var byteCount: Int { writer.bytes.count }

    /// Adds an object to `objects`, or to `prefetched`.
    public mutating func append(_ object: ObjectSnapshot, prefetched: Bool = false) {
        reserveRoom()
        let start = writer.beginSizableMessage(prefetched ? 2 : 1)
        writer.object(object)
        writer.endSizableMessage(start)
    }

    /// Adds an object read as a row to `objects`, or to `prefetched`: the same bytes as its
    /// snapshot's (``ObjectRow/snapshot``), but for the order of its map entries.
    public mutating func append(_ row: ObjectRow, prefetched: Bool = false) {
        row.attributes.withUnsafeBufferPointer { values in
            append(
                id: row.id, version: row.version, shape: row.shape, count: values.count, toOne: row.toOne,
                prefetched: prefetched
            ) { .value(values[$0]) }
        }
    }

    /// Adds an object whose first `count` attribute values are asked of `cells` (``RowCell``), as
    /// ``append(_:prefetched:)`` adds a row.
    public mutating func append(
        id: PersistentIdentifier, version: Int64, shape: ObjectShape, count: Int, toOne: [PersistentIdentifier?],
        prefetched: Bool = false, cells: (Int) -> RowCell
    ) {
        let names: ShapeNames
        if let known = self.names, known.shape === shape {
            names = known
        } else {
            keepURIPrefix()
            names = shape.derived(ShapeNames.init)
            self.names = names
            // The answer's URIs start from the prefix the shape's last answer wrote.
            if writer.uriPrefix == nil { writer.uriPrefix = names.uriPrefix }
        }
        if writer.bytes.capacity == 0 {
            writer.bytes.reserveCapacity(max(Self.firstRoom, min(expectedObjects * names.objectBytes, 16 * 1024)))
        }
        rowObjects += 1
        let start = writer.beginSizableMessage(prefetched ? 2 : 1)
        writer.object(id: id, version: version, names: names, count: count, toOne: toOne, cells: cells)
        writer.endSizableMessage(start)
    }

    /// Gives the shape whose objects were last written the URI prefix they left, for its next
    /// answer to start from: when the shape changes and when the answer is finished, not after
    /// every object (a copy of the prefix, a retain and a release and a comparison an object).
    private mutating func keepURIPrefix() {
        guard let names, let made = writer.uriPrefix, made.bytes != names.uriPrefix?.bytes else { return }
        names.keep(made)
    }

    /// Room for a small answer before its first object: grown from nothing as it was written,
    /// a point read's answer was made again four times (3,000 instructions).
    private mutating func reserveRoom() {
        if writer.bytes.capacity == 0 { writer.bytes.reserveCapacity(Self.firstRoom) }
    }

    private static let firstRoom = 512

    /// A sink of objects (``ObjectRowSink``): each is added to `objects`; it always takes more.
    public mutating func add(_ row: ObjectRow) -> Bool {
        append(row)
        return true
    }

    public mutating func add(_ snapshot: ObjectSnapshot) -> Bool {
        append(snapshot)
        return true
    }

    public mutating func add(
        id: PersistentIdentifier, version: Int64, shape: ObjectShape, toOne: [PersistentIdentifier?],
        cells: (Int) -> RowCell
    ) -> Bool {
        append(id: id, version: version, shape: shape, count: shape.attributeNames.count, toOne: toOne, cells: cells)
        return true
    }

    /// Adds an object's URI to `identifiers`.
    public mutating func append(identifier uri: String) {
        writer.string(3, uri)
    }

    /// Sets `count`.
    public mutating func setCount(_ count: Int) {
        writer.tag(4, 0)
        writer.varint(UInt64(bitPattern: Int64(count)))
    }

    /// The response's bytes; the encoder starts a new, empty response.
    public mutating func finish() -> [UInt8] {
        defer {
            writer = ProtobufWriter()
            rowObjects = 0
        }
        keepURIPrefix()
        names?.noteAnswer(bytes: writer.bytes.count, objects: rowObjects)
        return writer.bytes
    }

    /// The bytes of a response of `objects` alone: also a `GetObjectsResponse`, whose one field
    /// is `FetchResponse`'s `objects`.
    public static func objects(_ objects: [ObjectSnapshot]) -> [UInt8] {
        var encoder = FetchResponseEncoder()
        for object in objects { encoder.append(object) }
        return encoder.finish()
    }
}
