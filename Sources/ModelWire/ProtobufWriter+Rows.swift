import ModelCore
import Synchronization

/// Objects written from rows (``ObjectRow``), as the daemon answers a small fetch or a point
/// read: their names encoded once per shape (``ShapeNames``), their values in the shape's order.
extension ProtobufWriter {
    /// An object's message from its row (``ObjectRow``), with `names` made for the row's shape.
    mutating func object(_ row: ObjectRow, names: ShapeNames) {
        uri(1, row.id)
        if row.version != 0 {
            tag(2, 0)
            varint(UInt64(bitPattern: row.version))
        }
        attributes(3, names: names, values: row.attributes)
        for (index, target) in row.toOne.enumerated() {
            message(4) { entry in
                entry.bytes.append(contentsOf: names.toOne[index])
                entry.message(2) { wire in
                    if let target { wire.uri(1, target) } else { wire.string(1, "") }
                }
            }
        }
    }

    /// A `map<string, Value>` field from a shape's names, already encoded (``ShapeNames``), and
    /// their values in the same order: written in one pass into room on the stack, then
    /// appended at once (sizing every entry first, then writing it, cost twice the walk). Maps
    /// past that room, or with values whose text would have to be made first (URLs, decimals),
    /// are appended entry by entry.
    mutating func attributes(_ field: Int, names: ShapeNames, values: [Value]) {
        let count = min(names.attributeCount, values.count)
        guard field < 16 else { return appendAttributes(field, names: names, values: values) }
        let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.scratchSize) { scratch in
            names.attributeBytes.withUnsafeBufferPointer { nameBytes in
                values.withUnsafeBufferPointer { values in
                    var out = RawOutput(buffer: scratch, position: 0)
                    let tag = UInt8(field << 3 | 2)
                    for index in 0..<count {
                        let name = UnsafeBufferPointer(rebasing: nameBytes[names.attributeRanges[index]])
                        guard let valueLength = Self.length(of: values[index]) else { return false }
                        let entry = name.count + 1 + Self.varintLength(UInt64(valueLength)) + valueLength
                        guard out.position + 1 + Self.varintLength(UInt64(entry)) + entry <= scratch.count else {
                            return false
                        }
                        out.byte(tag)
                        out.varint(UInt64(entry))
                        out.bytes(name)
                        out.entryValue(values[index], length: valueLength)
                    }
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<out.position]))
                    return true
                }
            }
        }
        if !written { appendAttributes(field, names: names, values: values) }
    }

    /// The room on the stack ``attributes(_:names:values:)`` writes a map into: no more than
    /// Swift always keeps on the stack (larger room is checked for, and was put on the heap).
    private static let scratchSize = 1_024

    /// ``attributes(_:names:values:)`` appended byte by byte.
    private mutating func appendAttributes(_ field: Int, names: ShapeNames, values: [Value]) {
        for (index, value) in values.prefix(names.attributeCount).enumerated() {
            message(field) { entry in
                entry.bytes.append(contentsOf: names.attributeBytes[names.attributeRanges[index]])
                entry.message(2) { $0.value(value) }
            }
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
