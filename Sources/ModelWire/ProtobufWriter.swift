import Foundation
import ModelCore

/// Appends protobuf's wire format.
struct ProtobufWriter: Sendable {
    var bytes: [UInt8] = []
    /// The store and entity part of the last URI written, for the next.
    private var uriPrefix: PersistentIdentifier.URIPrefix?

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

    /// A `map<string, Value>` field: an entry message per value.
    mutating func attributes(_ field: Int, _ values: [String: Value]) {
        for (name, value) in values {
            message(field) { entry in
                entry.string(1, name)
                entry.message(2) { $0.value(value) }
            }
        }
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
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }
}
