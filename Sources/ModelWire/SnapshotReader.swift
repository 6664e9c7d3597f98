import Foundation
import ModelCore

/// Reads the `ObjectSnapshot` messages of a response, one after another (``FetchChunk``).
/// The objects of a response are usually of one entity, so each object's attributes and
/// relationships are read into a copy of the previous object's tables (see ``MapTemplate``).
struct SnapshotReader: Sendable {
    /// The store whose objects the URIs must name, when given.
    let store: UUID?
    private var attributes = MapTemplate<Value>(blank: .null)
    private var relationships = MapTemplate<RelationshipValue>(blank: .toOne(nil))
    /// The store and entity part of the last URI read, for the next.
    private var uriPrefix: PersistentIdentifier.URIPrefix?

    init(store: UUID?) {
        self.store = store
    }

    mutating func object(_ reader: ProtobufReader) throws(ModelError) -> ObjectSnapshot {
        var reader = reader
        var id: PersistentIdentifier?, version: Int64 = 0
        var attributeMap = attributes.start(), relationshipMap = relationships.start()
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): id = try reader.identifier(store: store, prefix: &uriPrefix)
            case (2, 0): version = Int64(bitPattern: try reader.varint())
            case (3, 2): try attributes.setValueEntry(from: &reader, in: &attributeMap)
            case (4, 2):
                // An entry without a value reads as an empty one, which sets no kind.
                let (name, value) = try Self.entry(reader.message())
                let target = try relationship(value ?? .empty)
                try relationships.set(target, nameAt: name, of: reader, in: &relationshipMap)
            default: try reader.skip(type)
            }
        }
        // An object without a URI is refused as an empty URI is.
        let objectID: PersistentIdentifier
        if let id { objectID = id } else { objectID = try PersistentIdentifier(uri: "") }
        return ObjectSnapshot(
            id: objectID, version: version,
            attributes: attributes.finish(attributeMap), relationships: relationships.finish(relationshipMap))
    }

    /// A map entry: where its key's bytes are, and its value message if there is one.
    @inline(__always)
    fileprivate static func entry(_ reader: ProtobufReader) throws(ModelError) -> (Range<Int>, ProtobufReader?) {
        if let (key, value) = reader.plainEntry() { return (key, value) }
        var reader = reader
        var key = 0..<0, value: ProtobufReader?
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): key = try reader.stringRange()
            case (2, 2): value = try reader.message()
            default: try reader.skip(type)
            }
        }
        return (key, value)
    }

    @inline(__always)
    fileprivate static func value(_ reader: ProtobufReader) throws(ModelError) -> Value {
        var reader = reader
        var value = Value.null
        while let (field, type) = try reader.tag() {
            if let kind = try reader.valueKind(field, type) { value = kind } else { try reader.skip(type) }
        }
        return value
    }

    private mutating func relationship(_ reader: ProtobufReader) throws(ModelError) -> RelationshipValue {
        var reader = reader
        var relationship: RelationshipValue?
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): relationship = .toOne(try reader.optionalIdentifier(store: store, prefix: &uriPrefix))
            case (2, 2):
                var list = try reader.message()
                var ids: [PersistentIdentifier] = []
                while let (field, type) = try list.tag() {
                    if (field, type) == (1, 2) {
                        ids.append(try list.identifier(store: store, prefix: &uriPrefix))
                    } else {
                        try list.skip(type)
                    }
                }
                relationship = .toMany(ids)
            default: try reader.skip(type)
            }
        }
        guard let relationship else { throw ModelError.relationshipWithoutKind }
        return relationship
    }
}

/// One object's map (attributes or relationships by name) read into a copy of the previous
/// object's map. While the names are the previous object's, in any order, each value is set in
/// place, at the index the previous map has for its name: names are told apart by their bytes,
/// with no hashing and no growing, and the table is copied once. Other names, or fewer of
/// them, are read into a new map, which is the template for the next object. Names are looked
/// for in the order they came in that map, which is how the next object usually sends them.
struct MapTemplate<Element: Sendable>: Sendable {
    /// The template: the last map of its own, its values replaced by ``blank``, so that the
    /// copy each object's map starts as holds no value to retain and then release when the
    /// object's own is set (a string's or a list's).
    private var template: [String: Element] = [:]
    /// The value the template's entries hold.
    private let blank: Element

    init(blank: Element) {
        self.blank = blank
    }

    /// The template's names in the order they were read. In the table's own order (set by a
    /// hash seed each process picks), the next object's names were found in another order in
    /// each run: up to 10,000 more instructions for a 50-object fetch, from run to run.
    private var order: [String] = []
    /// The names of the map of its own being read, in the order they were first set: the next
    /// ``order`` if that map becomes the template. Kept here, not in ``Map``: a field there cost
    /// every object a retain and a release.
    private var reading: [String] = []
    /// The template's names, each with its index; at most ``maximumSlots``, so that a bit of a
    /// `UInt64` can say which are set.
    private var slots: [(name: [UInt8], index: Dictionary<String, Element>.Index)] = []
    /// Whether ``slots`` are the template's: they are made when the next map starts, not for a
    /// map that turns out to be the last (a point read's one object).
    private var slotsMade = true
    private static var maximumSlots: Int { 64 }

    /// One object's map as it is read.
    struct Map {
        fileprivate var table: [String: Element]
        /// The slots set so far, one bit each, while following the template.
        fileprivate var filled: UInt64 = 0
        /// Where the next name is looked for first: after the last one found.
        fileprivate var next = 0
        /// Whether the map has left the template (``table`` is then a map of its own).
        fileprivate var isOwn: Bool
    }

    /// A map to read an object's entries into: a copy of the template, or a table of its own
    /// when there is no template to follow.
    mutating func start() -> Map {
        if !slotsMade {
            slots = order.compactMap { name in template.index(forKey: name).map { (Array(name.utf8), $0) } }
            if slots.count != template.count {
                slots = template.indices.map { (Array(template.keys[$0].utf8), $0) }
            }
            slotsMade = true
        }
        if !reading.isEmpty { reading.removeAll(keepingCapacity: true) }
        return slots.isEmpty ? Map(table: [:], isOwn: true) : Map(table: template, isOwn: false)
    }

    /// Sets the entry whose name's bytes are at `name` in `reader`'s buffer.
    @inline(__always)
    mutating func set(
        _ value: consuming Element, nameAt name: Range<Int>, of reader: ProtobufReader, in map: inout Map
    ) throws(ModelError) {
        if !map.isOwn, let slot = slot(named: name, of: reader, from: map.next) {
            // A name written twice sets its slot twice: the last value wins, as in a map.
            map.table.values[slots[slot].index] = value
            map.filled |= 1 << UInt64(slot)
            map.next = slot + 1 == slots.count ? 0 : slot + 1
            return
        }
        leaveTemplate(&map)
        // Room for a few entries at once: grown from nothing, a table was made again at 1, 2, 4.
        if map.table.isEmpty { map.table.reserveCapacity(8) }
        let key = try reader.text(in: name)
        if map.table.updateValue(value, forKey: key) == nil { reading.append(key) }
    }

    /// The object's map; one that left the template becomes the next object's template.
    mutating func finish(_ map: consuming Map) -> [String: Element] {
        // An empty map after an empty one (an entity without relationships) changes nothing.
        if map.isOwn, map.table.isEmpty, template.isEmpty, order.isEmpty { return [:] }
        if !map.isOwn {
            if map.filled == Self.mask(slots.count) { return map.table }
            leaveTemplate(&map)
        }
        // A map with more names than slots is not followed (nor kept).
        let kept = map.table.count <= Self.maximumSlots
        let blank = blank
        template = kept ? map.table.mapValues { _ in blank } : [:]
        if kept { swap(&order, &reading) } else { order = [] }
        slots = []
        slotsMade = false
        return map.table
    }

    /// The template's slot whose name has the bytes at `name`, looked for from `start` on.
    @inline(__always)
    private func slot(named name: Range<Int>, of reader: ProtobufReader, from start: Int) -> Int? {
        slots.firstIndex(wrappingFrom: start) { reader.bytes(in: name, equal: $0.name) }
    }

    /// Makes `map` a table of its own holding the entries set so far.
    private mutating func leaveTemplate(_ map: inout Map) {
        guard !map.isOwn else { return }
        var table: [String: Element] = [:]
        for (slot, (_, index)) in slots.enumerated() where map.filled & (1 << UInt64(slot)) != 0 {
            table[template.keys[index]] = map.table.values[index]
            reading.append(template.keys[index])
        }
        map.table = table
        map.isOwn = true
    }

    private static func mask(_ count: Int) -> UInt64 {
        count >= 64 ? .max : (1 << UInt64(count)) - 1
    }
}

extension MapTemplate where Element == Value {
    /// Reads the `map<string, Value>` entry at `reader` (its length next) into `map`: in one
    /// pass when it is laid out as writers write a short one (``ProtobufReader/plainValueEntry()``),
    /// otherwise field by field, an entry without a value reading as NULL; a malformed value
    /// throws naming its key. An object's attributes and an aggregate row's values
    /// (``AggregateResponseReader``) are such maps.
    @inline(__always)
    mutating func setValueEntry(from reader: inout ProtobufReader, in map: inout Map) throws(ModelError) {
        if let (name, value) = try reader.plainValueEntry() {
            try set(value, nameAt: name, of: reader, in: &map)
            return
        }
        let (name, message) = try SnapshotReader.entry(reader.message())
        let value: Value
        do {
            value = try message.map(SnapshotReader.value) ?? .null
        } catch {
            throw error.naming(property: try reader.text(in: name))
        }
        try set(value, nameAt: name, of: reader, in: &map)
    }
}
