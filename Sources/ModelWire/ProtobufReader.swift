import Foundation
import Glibc
import ModelCore

/// Reads protobuf's wire format from a range of bytes; anything malformed (a truncated field,
/// an impossible length, text that is not UTF-8) throws.
///
/// A reader borrows its bytes (``reading(_:_:)``) and must not outlive that call: a reader per
/// nested message and per map entry, each holding the array, cost a fetch's decoding a
/// retain and a release apiece, and every byte read a bounds check the reader already makes.
struct ProtobufReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index: Int
    private let end: Int

    /// A reader of `range` of `bytes`, which must lie within them.
    private init(_ bytes: UnsafeBufferPointer<UInt8>, in range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count)
        self.bytes = bytes
        index = range.lowerBound
        end = range.upperBound
    }

    /// Runs `body` with a reader of all of `bytes`, valid only inside it.
    static func reading<Result>(_ bytes: [UInt8], _ body: (inout ProtobufReader) throws(ModelError) -> Result)
        throws(ModelError) -> Result
    {
        try bytes.withUnsafeBufferPointer { (buffer) throws(ModelError) -> Result in
            var reader = ProtobufReader(buffer, in: 0..<buffer.count)
            return try body(&reader)
        }
    }

    /// Runs `body` with a reader of all of `bytes`, which must stay valid while it runs.
    static func reading<Result>(
        _ bytes: UnsafeRawBufferPointer, _ body: (inout ProtobufReader) throws(ModelError) -> Result
    ) throws(ModelError) -> Result {
        var reader = ProtobufReader(bytes.assumingMemoryBound(to: UInt8.self), in: 0..<bytes.count)
        return try body(&reader)
    }

    /// How many bytes are left to read.
    var remaining: Int { end - index }

    /// A reader of nothing.
    static var empty: ProtobufReader { ProtobufReader(UnsafeBufferPointer(start: nil, count: 0), in: 0..<0) }

    static func malformed(_ what: String) -> ModelError {
        ModelError(.invalidArgument, "a malformed response from modeld: \(what)")
    }

    static func zigZag(_ raw: UInt64) -> Int64 {
        Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// A varint; one of a byte (most tags and lengths) is read inline.
    @inline(__always)
    mutating func varint() throws(ModelError) -> UInt64 {
        if index < end, bytes[index] < 0x80 {
            defer { index += 1 }
            return UInt64(bytes[index])
        }
        return try longVarint()
    }

    /// ``varint()`` of more than a byte, or truncated.
    private mutating func longVarint() throws(ModelError) -> UInt64 {
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
    @inline(__always)
    mutating func tag() throws(ModelError) -> (Int, UInt8)? {
        guard index < end else { return nil }
        let key = try varint()
        let field = key >> 3
        guard field > 0, field <= 536_870_911 else { throw Self.malformed("field number \(field)") }
        return (Int(field), UInt8(key & 7))
    }

    mutating func fixed64() throws(ModelError) -> UInt64 {
        guard end - index >= 8 else { throw Self.malformed("a truncated 64-bit field") }
        // One load of the 8 little-endian bytes (a loop over them took 70 instructions).
        let value = UInt64(
            littleEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(fromByteOffset: index, as: UInt64.self))
        index += 8
        return value
    }

    @inline(__always)
    private mutating func delimited() throws(ModelError) -> Range<Int> {
        let length = try varint()
        guard length <= UInt64(end - index) else { throw Self.malformed("a length of \(length) past the end") }
        let range = index..<(index + Int(length))
        index = range.upperBound
        return range
    }

    /// A map entry as protobuf writers write one, read without a loop over its fields: the key
    /// (field 1) and then the value (field 2), each a one-byte tag and a one-byte length, and
    /// nothing else. The key's bytes and a reader of the value; nil for any other entry, read
    /// nothing (the caller reads it field by field).
    @inline(__always)
    func plainEntry() -> (key: Range<Int>, value: ProtobufReader)? {
        guard end - index >= 4, bytes[index] == 0x0A else { return nil }
        let keyLength = Int(bytes[index + 1])
        let valueTag = index + 2 + keyLength
        guard keyLength < 0x80, valueTag + 2 <= end, bytes[valueTag] == 0x12 else { return nil }
        let valueLength = Int(bytes[valueTag + 1])
        guard valueLength < 0x80, valueTag + 2 + valueLength == end else { return nil }
        return ((index + 2)..<valueTag, ProtobufReader(bytes, in: (valueTag + 2)..<end))
    }

    /// A `map<string, Value>` entry, its length next, read in one pass when it is laid out as
    /// protobuf writers write a short one: a one-byte length, the key (field 1) and then the
    /// value (field 2), each with a one-byte tag and length, the value message one field with a
    /// one-byte tag. The key's bytes and the value; nil, having read nothing, for any other
    /// entry (the caller reads it field by field, as ``plainEntry()`` and a loop over the value
    /// message do: a fifth of a fetch's decoding went to those steps). A value that is
    /// malformed throws, naming its attribute.
    @inline(__always)
    mutating func plainValueEntry() throws(ModelError) -> (key: Range<Int>, value: Value)? {
        guard index < end, bytes[index] < 0x80 else { return nil }
        let entryEnd = index + 1 + Int(bytes[index])
        guard entryEnd <= end,
            let (key, value) = ProtobufReader(bytes, in: (index + 1)..<entryEnd).plainEntry(),
            value.index < value.end, bytes[value.index] < 0x80
        else { return nil }
        let fieldTag = bytes[value.index]
        var field = ProtobufReader(bytes, in: (value.index + 1)..<value.end)
        let kind: Value?
        do {
            kind = try field.valueKind(Int(fieldTag >> 3), fieldTag & 7)
        } catch {
            throw error.naming(property: try text(in: key))
        }
        guard let kind, field.index == entryEnd else { return nil }
        index = entryEnd
        return (key, kind)
    }

    @inline(__always)
    mutating func message() throws(ModelError) -> ProtobufReader {
        ProtobufReader(bytes, in: try delimited())
    }

    /// A bytes field's contents, valid only while the reader is (copy what is kept).
    mutating func lengthDelimitedBytes() throws(ModelError) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[try delimited()])
    }

    /// A string field's text.
    mutating func string() throws(ModelError) -> String {
        try text(in: delimited())
    }

    /// A string field holding an object's URI, parsed from its bytes without making a string of
    /// it; one that is not well formed is read as text, for ``PersistentIdentifier/init(uri:)``
    /// to say what is wrong with it. With `store`, the URI must be one of that store's. `prefix`
    /// keeps the store and entity part of the last URI read, for the next (the URIs of one
    /// message usually share it).
    mutating func identifier(store: UUID?, prefix: inout PersistentIdentifier.URIPrefix?) throws(ModelError)
        -> PersistentIdentifier
    {
        try identifier(in: delimited(), store: store, prefix: &prefix)
    }

    /// ``identifier(store:prefix:)``, or nil for an empty field (a to-one relationship that is not set).
    mutating func optionalIdentifier(store: UUID?, prefix: inout PersistentIdentifier.URIPrefix?) throws(ModelError)
        -> PersistentIdentifier?
    {
        let range = try delimited()
        return range.isEmpty ? nil : try identifier(in: range, store: store, prefix: &prefix)
    }

    /// The URI at `range` (a string field's, ``stringRange()``), checked against `store` when
    /// given, with ``PersistentIdentifier/init(wire:in:)``'s errors.
    func identifier(in range: Range<Int>, store: UUID?, prefix: inout PersistentIdentifier.URIPrefix?)
        throws(ModelError) -> PersistentIdentifier
    {
        let id = try identifier(in: range, prefix: &prefix)
        guard let store, !id.storeIdentifier.isSame(as: store) else { return id }
        return try PersistentIdentifier(uri: text(in: range), in: store)
    }

    private func identifier(in range: Range<Int>, prefix: inout PersistentIdentifier.URIPrefix?) throws(ModelError)
        -> PersistentIdentifier
    {
        if let parsed = PersistentIdentifier(uriBytes: UnsafeBufferPointer(rebasing: bytes[range]), prefix: &prefix) {
            return parsed
        }
        return try PersistentIdentifier(uri: text(in: range))
    }

    /// A string field's bytes, where they are (for ``text(in:)`` or ``bytes(in:equal:)``).
    mutating func stringRange() throws(ModelError) -> Range<Int> {
        try delimited()
    }

    /// Whether the bytes at `range` are `expected`.
    func bytes(in range: Range<Int>, equal expected: [UInt8]) -> Bool {
        expected.withUnsafeBufferPointer { bytes(in: range, equal: $0) }
    }

    /// Whether the bytes at `range` are those at `other`, both in the bytes being read.
    func bytes(in range: Range<Int>, equalBytesIn other: Range<Int>) -> Bool {
        range == other || bytes(in: range, equal: UnsafeBufferPointer(rebasing: bytes[other]))
    }

    private func bytes(in range: Range<Int>, equal expected: UnsafeBufferPointer<UInt8>) -> Bool {
        guard range.count == expected.count else { return false }
        guard !range.isEmpty else { return true }
        // Non-empty: both have an address.
        return ShortBytes.equal(bytes.baseAddress! + range.lowerBound, expected.baseAddress!, count: range.count)
    }

    /// The text at `range`. ASCII, the usual case, is copied into the string as it is
    /// (`String(decoding:as:)` took 230 instructions for a short one, this 150); other text is
    /// validated as UTF-8 (`String(validating:)` is generic, and looking up its metadata for
    /// every field cost a fifth of reading a fetch).
    func text(in range: Range<Int>) throws(ModelError) -> String {
        let field = UnsafeBufferPointer(rebasing: bytes[range])
        if UTF8Bytes.isASCII(field) {
            return String(unsafeUninitializedCapacity: field.count) { text in
                _ = text.initialize(fromContentsOf: field)
                return field.count
            }
        }
        guard let text = String(validating: field, as: UTF8.self) else {
            throw Self.malformed("text that is not UTF-8")
        }
        return text
    }

    /// Whether the bytes at `range` are ASCII.
    func isASCII(_ range: Range<Int>) -> Bool {
        UTF8Bytes.isASCII(UnsafeBufferPointer(rebasing: bytes[range]))
    }

    /// The value a `Value` message's field `field` of wire type `type` holds, reading it; nil,
    /// reading nothing, when the message has no such field (another number, or another type).
    @inline(__always)
    mutating func valueKind(_ field: Int, _ type: UInt8) throws(ModelError) -> Value? {
        switch (field, type) {
        case (1, 2): .string(try string())
        case (2, 0): .int(Self.zigZag(try varint()))
        case (3, 1): .double(Double(bitPattern: try fixed64()))
        case (4, 0): .bool(try varint() != 0)
        case (5, 0): .date(Timestamp(microsecondsSince1970: Self.zigZag(try varint())))
        case (6, 2): .data(Data(try lengthDelimitedBytes()))
        case (7, 2): try Value.parse(try string(), as: .uuid)
        case (8, 2): try Value.parse(try string(), as: .url)
        case (9, 2): try Value.parse(try string(), as: .decimal)
        case (10, 2): try Value.parse(try string(), as: .json)
        default: nil
        }
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
