import Foundation
import ModelCore

/// One response of a fetch, in ModelCore's types: what `modeld.v1.FetchResponse` carries.
public struct FetchChunk: Sendable, Equatable {
    public var objects: [ObjectSnapshot] = []
    public var prefetched: [ObjectSnapshot] = []
    public var identifiers: [PersistentIdentifier] = []
    /// The number of results in all (the last response only).
    public var count: Int?

    public init() {}

    /// Reads a response message.
    public init(wire: Modeld_V1_FetchResponse) throws(ModelError) {
        for object in wire.objects { objects.append(try ObjectSnapshot(wire: object)) }
        for object in wire.prefetched { prefetched.append(try ObjectSnapshot(wire: object)) }
        for uri in wire.identifiers { identifiers.append(try PersistentIdentifier(uri: uri)) }
        count = wire.hasCount ? Int(wire.count) : nil
    }

    /// Reads a serialized `FetchResponse` straight into ModelCore's types, without building the
    /// message, its maps and their `Value` messages first (``FetchResponseEncoder``'s reverse).
    /// It reads what any protobuf writer writes: fields in any order, unknown fields skipped.
    public init(serialized bytes: [UInt8]) throws(ModelError) {
        var reader = ProtobufReader(bytes, in: 0..<bytes.count)
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): objects.append(try Self.object(reader.message()))
            case (2, 2): prefetched.append(try Self.object(reader.message()))
            case (3, 2): identifiers.append(try PersistentIdentifier(uri: reader.string()))
            case (4, 0): count = Int(truncatingIfNeeded: Int64(bitPattern: try reader.varint()))
            default: try reader.skip(type)
            }
        }
    }

    private static func object(_ reader: ProtobufReader) throws(ModelError) -> ObjectSnapshot {
        var reader = reader
        var uri = "", version: Int64 = 0
        var attributes: [String: Value] = [:], relationships: [String: RelationshipValue] = [:]
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): uri = try reader.string()
            case (2, 0): version = Int64(bitPattern: try reader.varint())
            case (3, 2):
                let (name, value) = try entry(reader.message())
                do {
                    attributes[name] = try value.map(Self.value) ?? .null
                } catch {
                    throw error.naming(property: name)
                }
            case (4, 2):
                // An entry without a value reads as an empty one, which sets no kind.
                let (name, value) = try entry(reader.message())
                relationships[name] = try relationship(value ?? ProtobufReader([], in: 0..<0))
            default: try reader.skip(type)
            }
        }
        return ObjectSnapshot(id: try PersistentIdentifier(uri: uri), version: version, attributes: attributes, relationships: relationships)
    }

    /// A map entry: its key, and its value message if there is one.
    private static func entry(_ reader: ProtobufReader) throws(ModelError) -> (String, ProtobufReader?) {
        var reader = reader
        var key = "", value: ProtobufReader?
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): key = try reader.string()
            case (2, 2): value = try reader.message()
            default: try reader.skip(type)
            }
        }
        return (key, value)
    }

    private static func value(_ reader: ProtobufReader) throws(ModelError) -> Value {
        var reader = reader
        var value = Value.null
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): value = .string(try reader.string())
            case (2, 0): value = .int(ProtobufReader.zigZag(try reader.varint()))
            case (3, 1): value = .double(Double(bitPattern: try reader.fixed64()))
            case (4, 0): value = .bool(try reader.varint() != 0)
            case (5, 0): value = .date(Timestamp(microsecondsSince1970: ProtobufReader.zigZag(try reader.varint())))
            case (6, 2): value = .data(Data(try reader.lengthDelimitedBytes()))
            case (7, 2): value = try Value.parse(try reader.string(), as: .uuid)
            case (8, 2): value = try Value.parse(try reader.string(), as: .url)
            case (9, 2): value = try Value.parse(try reader.string(), as: .decimal)
            case (10, 2): value = try Value.parse(try reader.string(), as: .json)
            default: try reader.skip(type)
            }
        }
        return value
    }

    private static func relationship(_ reader: ProtobufReader) throws(ModelError) -> RelationshipValue {
        var reader = reader
        var relationship: RelationshipValue?
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2):
                let uri = try reader.string()
                relationship = .toOne(uri.isEmpty ? nil : try PersistentIdentifier(uri: uri))
            case (2, 2):
                var list = try reader.message()
                var ids: [PersistentIdentifier] = []
                while let (field, type) = try list.tag() {
                    if (field, type) == (1, 2) { ids.append(try PersistentIdentifier(uri: list.string())) } else { try list.skip(type) }
                }
                relationship = .toMany(ids)
            default: try reader.skip(type)
            }
        }
        guard let relationship else { throw ModelError.relationshipWithoutKind }
        return relationship
    }
}

/// Writes `modeld.v1.FetchResponse` bytes straight from ModelCore's types, as SwiftProtobuf
/// would write the message built from them (``FetchChunk/init(serialized:)`` reads them back):
/// building the message first — an `ObjectSnapshot` message per object, a `Value` message per
/// attribute, maps sized and then written — cost the daemon more than a small query itself.
public struct FetchResponseEncoder: Sendable {
    private var writer = ProtobufWriter()

    public init() {}

    /// The bytes written so far.
    public var byteCount: Int { writer.bytes.count }

    /// Adds an object to `objects`, or to `prefetched`.
    public mutating func append(_ object: ObjectSnapshot, prefetched: Bool = false) {
        writer.message(prefetched ? 2 : 1) { $0.object(object) }
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
        defer { writer = ProtobufWriter() }
        return writer.bytes
    }
}

/// Appends protobuf's wire format.
struct ProtobufWriter: Sendable {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
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
        string(1, object.id.uriRepresentation)
        if object.version != 0 {
            tag(2, 0)
            varint(UInt64(bitPattern: object.version))
        }
        for (name, value) in object.attributes {
            message(3) { entry in
                entry.string(1, name)
                entry.message(2) { $0.value(value) }
            }
        }
        for (name, relationship) in object.relationships {
            message(4) { entry in
                entry.string(1, name)
                entry.message(2) { wire in
                    switch relationship {
                    case .toOne(let id): wire.string(1, id?.uriRepresentation ?? "")
                    case .toMany(let ids): wire.message(2) { list in for id in ids { list.string(1, id.uriRepresentation) } }
                    }
                }
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

/// Reads protobuf's wire format from a range of bytes; anything malformed (a truncated field,
/// an impossible length, text that is not UTF-8) throws.
struct ProtobufReader {
    private let bytes: [UInt8]
    private var index: Int
    private let end: Int

    init(_ bytes: [UInt8], in range: Range<Int>) {
        self.bytes = bytes
        index = range.lowerBound
        end = range.upperBound
    }

    static func malformed(_ what: String) -> ModelError {
        ModelError(.invalidArgument, "a malformed FetchResponse from modeld: \(what)")
    }

    static func zigZag(_ raw: UInt64) -> Int64 {
        Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    mutating func varint() throws(ModelError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while index < end, shift < 64 {
            let byte = bytes[index]
            index += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        throw Self.malformed("a truncated or overlong varint")
    }

    /// The next field's number and wire type; nil at the end.
    mutating func tag() throws(ModelError) -> (Int, UInt8)? {
        guard index < end else { return nil }
        let key = try varint()
        let field = key >> 3
        guard field > 0, field <= 536_870_911 else { throw Self.malformed("field number \(field)") }
        return (Int(field), UInt8(key & 7))
    }

    mutating func fixed64() throws(ModelError) -> UInt64 {
        guard end - index >= 8 else { throw Self.malformed("a truncated 64-bit field") }
        var value: UInt64 = 0
        for offset in 0..<8 { value |= UInt64(bytes[index + offset]) << (8 * UInt64(offset)) }
        index += 8
        return value
    }

    private mutating func delimited() throws(ModelError) -> Range<Int> {
        let length = try varint()
        guard length <= UInt64(end - index) else { throw Self.malformed("a length of \(length) past the end") }
        let range = index..<(index + Int(length))
        index = range.upperBound
        return range
    }

    mutating func message() throws(ModelError) -> ProtobufReader {
        ProtobufReader(bytes, in: try delimited())
    }

    mutating func lengthDelimitedBytes() throws(ModelError) -> ArraySlice<UInt8> {
        bytes[try delimited()]
    }

    /// A string field's text. ASCII, the usual case, is taken as it is; other text is validated
    /// as UTF-8 (`String(validating:)` is generic, and looking up its metadata for every field
    /// cost a fifth of reading a fetch).
    mutating func string() throws(ModelError) -> String {
        let range = try delimited()
        let text: String? = bytes.withUnsafeBufferPointer { all in
            let field = UnsafeBufferPointer(rebasing: all[range])
            if Self.isASCII(field) { return String(decoding: field, as: UTF8.self) }
            return String(validating: field, as: UTF8.self)
        }
        guard let text else { throw Self.malformed("text that is not UTF-8") }
        return text
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let raw = UnsafeRawBufferPointer(bytes)
        while index + 8 <= bytes.count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < bytes.count {
            if bytes[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }

    /// Skips a field of wire type `type`.
    mutating func skip(_ type: UInt8) throws(ModelError) {
        switch type {
        case 0: _ = try varint()
        case 1:
            guard end - index >= 8 else { throw Self.malformed("a truncated 64-bit field") }
            index += 8
        case 2: _ = try delimited()
        case 5:
            guard end - index >= 4 else { throw Self.malformed("a truncated 32-bit field") }
            index += 4
        default: throw Self.malformed("wire type \(type)")
        }
    }
}
