import Foundation
import Glibc
import ModelCore

/// Appends protobuf's wire format.
struct ProtobufWriter: Sendable {
    var bytes: [UInt8] = []
    /// The store and entity part of the last URI written, for the next.
    var uriPrefix: PersistentIdentifier.URIPrefix?

    mutating func varint(_ value: UInt64) {
        // Tags and most lengths take one byte.
        if value < 0x80 {
            bytes.append(UInt8(value))
            return
        }
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func tag(_ field: Int, _ wireType: UInt8) {
        varint(UInt64(field) << 3 | UInt64(wireType))
    }

    mutating func string(_ field: Int, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            tag(field, 2)
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// A string field holding `id`'s URI.
    mutating func uri(_ field: Int, _ id: PersistentIdentifier) {
        // The usual URI, a permanent key shorter than 128 bytes, written on the stack with its
        // tag and length and appended at once (``PersistentIdentifier/writeURI(into:prefix:)``).
        if field < 16 {
            let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 129) { scratch -> Bool in
                guard
                    let length = id.writeURI(
                        into: UnsafeMutableBufferPointer(rebasing: scratch[2..<129]), prefix: &uriPrefix)
                else { return false }
                scratch[0] = UInt8(field << 3 | 2)
                scratch[1] = UInt8(length)
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<(length + 2)]))
                return true
            }
            if written { return }
        }
        message(field) { writer in id.appendURI(to: &writer.bytes, prefix: &writer.uriPrefix) }
    }

    /// A length-delimited field whose contents `body` writes. The length goes in front once
    /// known: one byte is kept for it, and the contents move up if it needs more.
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, 2)
        let start = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - start - 1
        if length < 0x80 {
            bytes[start] = UInt8(length)
            return
        }
        var prefix = ProtobufWriter()
        prefix.varint(UInt64(length))
        bytes.replaceSubrange(start..<(start + 1), with: prefix.bytes)
    }

    /// Begins a length-delimited field of about 128 bytes to 16 KiB (an object), whose contents
    /// are written next and which ``endSizableMessage(_:)`` ends: two bytes are kept for the
    /// length, so that contents of that size stay where they were written (``message(_:_:)``
    /// moves every one past 127 bytes), and shorter ones move down by one byte.
    mutating func beginSizableMessage(_ field: Int) -> Int {
        tag(field, 2)
        let start = bytes.count
        bytes.append(0)
        bytes.append(0)
        return start
    }

    /// Ends the field ``beginSizableMessage(_:)`` began at `start`, writing its length.
    mutating func endSizableMessage(_ start: Int) {
        let length = bytes.count - start - 2
        if length < 0x80 {
            bytes.withUnsafeMutableBufferPointer { buffer in
                // ! the buffer holds at least the two bytes kept.
                let base = buffer.baseAddress!
                base[start] = UInt8(length)
                memmove(base + start + 1, base + start + 2, length)
            }
            bytes.removeLast()
        } else if length < 0x4000 {
            bytes[start] = UInt8(truncatingIfNeeded: length) | 0x80
            bytes[start + 1] = UInt8(length >> 7)
        } else {
            var prefix = ProtobufWriter()
            prefix.varint(UInt64(length))
            bytes.replaceSubrange(start..<(start + 2), with: prefix.bytes)
        }
    }

    /// `count` zeros appended, to be written over: copied from ``zeros`` (appending a repeated
    /// element went byte by byte).
    private mutating func makeRoom(_ count: Int) {
        if count <= Self.zeros.count {
            bytes.append(contentsOf: Self.zeros[..<count])
        } else {
            bytes.append(contentsOf: repeatElement(0, count: count))
        }
    }

    mutating func object(_ object: ObjectSnapshot) {
        uri(1, object.id)
        if object.version != 0 {
            tag(2, 0)
            varint(UInt64(bitPattern: object.version))
        }
        attributes(3, object.attributes)
        for (name, relationship) in object.relationships {
            message(4) { entry in
                entry.string(1, name)
                entry.message(2) { wire in
                    switch relationship {
                    case .toOne(let id?): wire.uri(1, id)
                    case .toOne(nil): wire.string(1, "")
                    case .toMany(let ids): wire.message(2) { list in for id in ids { list.uri(1, id) } }
                    }
                }
            }
        }
    }

    /// A `map<string, Value>` field: an entry message per value. The entries are sized first and
    /// then written through a pointer into room made at once, rather than appended byte by byte
    /// with a check of the array's uniqueness and capacity each (docs/performance.md). Values
    /// whose text would have to be made first (URLs, decimals) take the appending path.
    mutating func attributes(_ field: Int, _ values: [String: Value]) {
        guard field < 16 else { return appendAttributes(field, values) }
        var total = 0
        for (name, value) in values {
            guard let valueLength = Self.length(of: value) else { return appendAttributes(field, values) }
            total += Self.entryLength(name: name.utf8.count, value: valueLength)
        }
        let start = bytes.count
        makeRoom(total)
        bytes.withUnsafeMutableBufferPointer { buffer in
            var out = RawOutput(buffer: buffer, position: start)
            let tag = UInt8(field << 3 | 2)
            for (name, value) in values {
                var name = name
                name.withUTF8 { name in
                    let valueLength = Self.length(of: value)! // ! sized above: every value has a length
                    out.byte(tag)
                    out.varint(UInt64(Self.entryContentLength(name: name.count, value: valueLength)))
                    out.byte(0x0A)
                    out.varint(UInt64(name.count))
                    out.bytes(name)
                    out.entryValue(value, length: valueLength)
                }
            }
            precondition(out.position == start + total, "an attribute map's size was miscounted")
        }
    }

    /// ``attributes(_:_:)`` appended byte by byte.
    private mutating func appendAttributes(_ field: Int, _ values: [String: Value]) {
        for (name, value) in values {
            message(field) { entry in
                entry.string(1, name)
                entry.message(2) { $0.value(value) }
            }
        }
    }

    /// Zeros to make room from (``attributes(_:_:)``).
    private static let zeros = [UInt8](repeating: 0, count: 4_096)

    /// The bytes of `value`'s `Value` message; nil for the kinds ``attributes(_:_:)`` appends.
    static func length(of value: Value) -> Int? {
        switch value {
        case .null: 0
        case .string(let text), .json(let text): 1 + varintLength(UInt64(text.utf8.count)) + text.utf8.count
        case .int(let number): 1 + varintLength(zigZag(number))
        case .double: 9
        case .bool: 2
        case .date(let timestamp): 1 + varintLength(zigZag(timestamp.microsecondsSince1970))
        case .data(let data): 1 + varintLength(UInt64(data.count)) + data.count
        case .uuid: 38
        case .url, .decimal: nil
        }
    }

    /// A map entry's bytes: its tag, its length, then its contents (``entryContentLength``).
    private static func entryLength(name: Int, value: Int) -> Int {
        let entry = entryContentLength(name: name, value: value)
        return 1 + varintLength(UInt64(entry)) + entry
    }

    /// A map entry's contents: the name's tag, length and bytes, the value's tag, length and bytes.
    private static func entryContentLength(name: Int, value: Int) -> Int {
        1 + varintLength(UInt64(name)) + name + 1 + varintLength(UInt64(value)) + value
    }

    static func varintLength(_ value: UInt64) -> Int {
        // 7 bits a byte; zero takes one.
        (64 - (value | 1).leadingZeroBitCount + 6) / 7
    }

    static func zigZag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    /// A `Value` message's contents: the one field of its kind, none for nil.
    mutating func value(_ value: Value) {
        switch value {
        case .null: break
        case .string(let text): string(1, text)
        case .int(let number): sint64(2, number)
        case .double(let number):
            tag(3, 1)
            withUnsafeBytes(of: number.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case .bool(let flag):
            tag(4, 0)
            bytes.append(flag ? 1 : 0)
        case .date(let timestamp): sint64(5, timestamp.microsecondsSince1970)
        case .data(let data):
            tag(6, 2)
            varint(UInt64(data.count))
            bytes.append(contentsOf: data)
        case .uuid(let uuid): string(7, uuid.lowercasedText)
        case .url(let url): string(8, url.absoluteString)
        case .decimal(let decimal): string(9, decimal.canonicalText)
        case .json(let text): string(10, text)
        }
    }

    private mutating func sint64(_ field: Int, _ value: Int64) {
        tag(field, 0)
        varint(Self.zigZag(value))
    }
}

/// Bytes written at a position of room already made (``ProtobufWriter/attributes(_:_:)``).
struct RawOutput {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    var position: Int

    mutating func byte(_ byte: UInt8) {
        buffer[position] = byte
        position += 1
    }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        byte(UInt8(value))
    }

    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        precondition(position + source.count <= buffer.count)
        // ! the room is non-empty: `source` fits in it.
        ShortBytes.copy(
            UnsafeRawPointer(base), to: UnsafeMutableRawPointer(buffer.baseAddress! + position), count: source.count)
        position += source.count
    }

    mutating func text(_ tag: UInt8, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            byte(tag)
            varint(UInt64(utf8.count))
            bytes(utf8)
        }
    }

    /// A map entry's value field (2): its tag, the length of `value`'s `Value` message, and the
    /// message (``value(_:)``).
    mutating func entryValue(_ value: Value, length: Int) {
        byte(0x12)
        varint(UInt64(length))
        self.value(value)
    }

    /// A `Value` message's contents, as ``ProtobufWriter/value(_:)`` writes them.
    mutating func value(_ value: Value) {
        switch value {
        case .null: break
        case .string(let text): self.text(0x0A, text)
        case .int(let number): cell(.int(number))
        case .double(let number): cell(.double(number))
        case .bool(let flag): cell(.bool(flag))
        case .date(let timestamp): cell(.date(microseconds: timestamp.microsecondsSince1970))
        case .data(let data):
            byte(0x32)
            varint(UInt64(data.count))
            data.withUnsafeBytes { bytes($0.bindMemory(to: UInt8.self)) }
        case .uuid(let uuid):
            byte(0x3A)
            byte(36)
            position += uuid.writeLowercased(into: UnsafeMutableBufferPointer(rebasing: buffer[position...]))
        case .json(let text): self.text(0x52, text)
        case .url, .decimal: preconditionFailure("URLs and decimals are appended (ProtobufWriter.attributes)")
        }
    }
}
