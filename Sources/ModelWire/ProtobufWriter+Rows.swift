import ModelCore
import Synchronization

/// Objects written from rows (``ObjectRow``), as the daemon answers a small fetch or a point
/// read: their names encoded once per shape (``ShapeNames``), their values in the shape's order.
extension ProtobufWriter {
    /// An object's message from its parts, its first `count` attributes' values asked of `cells`
    /// in the order of `names` (``RowCell``: a reader's columns, written without making values,
    /// or a row's values).
    mutating func object(
        id: PersistentIdentifier, version: Int64, names: ShapeNames, count: Int, toOne: [PersistentIdentifier?],
        cells: (Int) -> RowCell
    ) {
        uri(1, id)
        if version != 0 {
            tag(2, 0)
            varint(UInt64(bitPattern: version))
        }
        attributes(3, names: names, count: min(names.attributeCount, count), cells: cells)
        for (index, target) in toOne.enumerated() {
            message(4) { entry in
                entry.bytes.append(contentsOf: names.toOne[index])
                entry.message(2) { wire in
                    if let target { wire.uri(1, target) } else { wire.string(1, "") }
                }
            }
        }
    }

    /// A `map<string, Value>` field from a shape's names, already encoded (``ShapeNames``), and
    /// the first `count` values in the same order, asked of `cells`: written in one pass into
    /// room on the stack, then appended at once (sizing every entry first, then writing it, cost
    /// twice the walk). Each cell is looked at once, its entry sized and written in the same
    /// branch (``RawOutput/entry(_:name:cell:)``). Maps past that room, or with values whose text
    /// would have to be made first (URLs, decimals), are appended entry by entry, asking `cells`
    /// again.
    mutating func attributes(_ field: Int, names: ShapeNames, count: Int, cells: (Int) -> RowCell) {
        guard field < 16 else { return appendAttributes(field, names: names, count: count, cells: cells) }
        let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.scratchSize) { scratch in
            // The names' arrays taken once, not retained and released at every entry.
            names.attributeBytes.withUnsafeBufferPointer { nameBytes in
                names.attributeRanges.withUnsafeBufferPointer { ranges in
                    var out = RawOutput(buffer: scratch, position: 0)
                    let tag = UInt8(field << 3 | 2)
                    for index in 0..<count {
                        let name = UnsafeBufferPointer(rebasing: nameBytes[ranges[index]])
                        guard out.entry(tag, name: name, cell: cells(index)) else { return false }
                    }
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<out.position]))
                    return true
                }
            }
        }
        if !written { appendAttributes(field, names: names, count: count, cells: cells) }
    }

    /// The room on the stack ``attributes(_:names:count:cells:)`` writes a map into: no more
    /// than Swift always keeps on the stack (larger room is checked for, and was put on the heap).
    private static let scratchSize = 1_024

    /// ``attributes(_:names:count:cells:)`` appended byte by byte.
    private mutating func appendAttributes(_ field: Int, names: ShapeNames, count: Int, cells: (Int) -> RowCell) {
        for index in 0..<count {
            let value = cells(index).value
            message(field) { entry in
                entry.bytes.append(contentsOf: names.attributeBytes[names.attributeRanges[index]])
                entry.message(2) { $0.value(value) }
            }
        }
    }
}

extension RawOutput {
    /// A map entry of `tag` holding `name` (its key, already encoded) and `cell`'s `Value`
    /// message, sized and written in one branch of the cell's kind; false, writing nothing,
    /// when it does not fit in the room left or its value's text would have to be made first
    /// (URLs, decimals).
    @inline(__always)
    mutating func entry(_ tag: UInt8, name: UnsafeBufferPointer<UInt8>, cell: RowCell) -> Bool {
        switch cell {
        case .null:
            return header(tag, name: name, valueLength: 0)
        case .int(let number):
            return zigZagEntry(tag, name: name, field: 0x10, number)
        case .double(let number):
            guard header(tag, name: name, valueLength: 9) else { return false }
            byte(0x19)
            withUnsafeBytes(of: number.bitPattern.littleEndian) { bytes($0.bindMemory(to: UInt8.self)) }
        case .bool(let flag):
            guard header(tag, name: name, valueLength: 2) else { return false }
            byte(0x20)
            byte(flag ? 1 : 0)
        case .date(let microseconds):
            return zigZagEntry(tag, name: name, field: 0x28, microseconds)
        case .text(let text):
            let length = 1 + ProtobufWriter.varintLength(UInt64(text.count)) + text.count
            guard header(tag, name: name, valueLength: length) else { return false }
            byte(0x0A)
            varint(UInt64(text.count))
            bytes(text)
        case .value(let value):
            guard let length = ProtobufWriter.length(of: value), header(tag, name: name, valueLength: length)
            else { return false }
            self.value(value)
        }
        return true
    }

    /// A map entry whose `Value` holds `number` zig-zag encoded in the varint field `field`
    /// (ints, dates), as ``entry(_:name:cell:)`` writes it.
    @inline(__always)
    private mutating func zigZagEntry(_ tag: UInt8, name: UnsafeBufferPointer<UInt8>, field: UInt8, _ number: Int64)
        -> Bool
    {
        let zigZag = ProtobufWriter.zigZag(number)
        guard header(tag, name: name, valueLength: 1 + ProtobufWriter.varintLength(zigZag)) else { return false }
        byte(field)
        varint(zigZag)
        return true
    }

    /// A map entry's start: its tag and length, the key (`name`), and the value field's tag
    /// and length (`valueLength` bytes follow); false, writing nothing, when the whole entry
    /// does not fit in the room left.
    @inline(__always)
    private mutating func header(_ tag: UInt8, name: UnsafeBufferPointer<UInt8>, valueLength: Int) -> Bool {
        let entry = name.count + 1 + ProtobufWriter.varintLength(UInt64(valueLength)) + valueLength
        guard position + 1 + ProtobufWriter.varintLength(UInt64(entry)) + entry <= buffer.count else { return false }
        byte(tag)
        varint(UInt64(entry))
        bytes(name)
        byte(0x12)
        varint(UInt64(valueLength))
        return true
    }

    /// A cell's `Value` message, as ``value(_:)`` writes the value it holds.
    mutating func cell(_ cell: RowCell) {
        switch cell {
        case .null: break
        case .int(let number):
            byte(0x10)
            varint(ProtobufWriter.zigZag(number))
        case .double(let number):
            byte(0x19)
            withUnsafeBytes(of: number.bitPattern.littleEndian) { bytes($0.bindMemory(to: UInt8.self)) }
        case .bool(let flag):
            byte(0x20)
            byte(flag ? 1 : 0)
        case .date(let microseconds):
            byte(0x28)
            varint(ProtobufWriter.zigZag(microseconds))
        case .text(let text):
            byte(0x0A)
            varint(UInt64(text.count))
            bytes(text)
        case .value(let value): self.value(value)
        }
    }
}

/// A shape's names as a map entry begins with them: the key's tag (1), length and UTF-8 bytes,
/// made once per shape (``FetchResponseEncoder``). The attributes' are kept in one array, each
/// at its range: an array per name cost a retain and a release per value written.
final class ShapeNames: Sendable {
    let shape: ObjectShape
    let attributeBytes: [UInt8]
    let attributeRanges: [Range<Int>]
    let toOne: [[UInt8]]
    /// The URI prefix of the shape's objects last written, for the next answer to start from
    /// (writing the store's UUID as text was a tenth of a point read's encoding).
    private let lastURIPrefix = Mutex<PersistentIdentifier.URIPrefix?>(nil)
    /// The most bytes an object of the shape took in an answer so far (up to 4 KB): what an
    /// answer of many objects starts with room for (``FetchResponseEncoder/expectedObjects``).
    private let largestObject = Atomic<Int>(0)

    /// About how many bytes an object of this shape takes in an answer; 0 before the first.
    var objectBytes: Int { largestObject.load(ordering: .relaxed) }

    /// Notes an answer of `bytes` holding `objects` objects of this shape.
    func noteAnswer(bytes: Int, objects: Int) {
        guard objects > 0 else { return }
        let each = min((bytes + objects - 1) / objects, 4_096)
        if each > largestObject.load(ordering: .relaxed) { largestObject.store(each, ordering: .relaxed) }
    }

    var attributeCount: Int { attributeRanges.count }

    /// The URI prefix kept by ``keep(_:)``, if any.
    var uriPrefix: PersistentIdentifier.URIPrefix? { lastURIPrefix.withLock { $0 } }

    func keep(_ prefix: PersistentIdentifier.URIPrefix?) {
        lastURIPrefix.withLock { $0 = prefix }
    }

    init(_ shape: ObjectShape) {
        self.shape = shape
        var bytes: [UInt8] = [], ranges: [Range<Int>] = []
        for name in shape.attributeNames {
            let start = bytes.count
            bytes.append(contentsOf: Self.encodedKey(name))
            ranges.append(start..<bytes.count)
        }
        attributeBytes = bytes
        attributeRanges = ranges
        toOne = shape.toOneNames.map(Self.encodedKey)
    }

    private static func encodedKey(_ name: String) -> [UInt8] {
        var writer = ProtobufWriter()
        writer.string(1, name)
        return writer.bytes
    }
}
