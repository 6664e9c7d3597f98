import Foundation
import ModelCore

/// An `ApplyRequest` read straight from its bytes into ModelCore's types, for the daemon:
/// SwiftProtobuf builds a message per change and per value, and maps of them, which cost a
/// one-object save 5-7 µs and a 100,000-object one about two thirds of a second.
///
/// Only the plain form is read this way: inserts, updates and deletes without relationships,
/// each field once where a repeat would merge, nothing unknown, every value well formed. For
/// anything else ``init(serialized:)`` returns nil and SwiftProtobuf reads the request, so that
/// what is accepted, and every error, stays exactly as it was.
public struct ApplyRequestFields: Sendable {
    public private(set) var store = ""
    public private(set) var author = ""
    public private(set) var uniquenessPolicy = Modeld_V1_UniquenessPolicy.error
    public private(set) var returnTransaction = false
    private var changes: [Change] = []
    private let bytes: [UInt8]

    /// One change, its URIs left as text until the store is known (``edits(in:)``).
    enum Change: Sendable {
        case insert(entity: String, attributes: [String: Value], temporaryURI: String)
        case update(uri: String, attributes: [String: Value])
        case delete(uri: String)
    }

    /// Reads a request in the plain form; nil for any other (see the type's description).
    public init?(serialized bytes: [UInt8]) {
        let plain = try? ProtobufReader.reading(bytes) { (reader) throws(ModelError) -> ApplyRequestFields? in
            var fields = ApplyRequestFields(bytes: bytes)
            var changeReader = ChangeReader()
            while let (field, type) = try reader.tag() {
                switch (field, type) {
                case (1, 2): fields.store = try reader.string()
                case (2, 2): fields.author = try reader.string()
                case (3, 0):
                    let number = Int(Int32(truncatingIfNeeded: try reader.varint()))
                    fields.uniquenessPolicy = Modeld_V1_UniquenessPolicy(rawValue: number) ?? .UNRECOGNIZED(number)
                case (4, 2):
                    guard let change = try changeReader.change(reader.message()) else { return nil }
                    fields.changes.append(change)
                case (5, 0): fields.returnTransaction = try reader.varint() != 0
                default: return nil
                }
            }
            return fields
        }
        guard let plain else { return nil }
        self = plain
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The changes as edits, their URIs checked against `storeIdentifier`. Errors are
    /// `ObjectEdit.edits(wire:in:)`'s: when a URI does not read, the request's message reads
    /// them, and says which change is wrong and why.
    public func edits(in storeIdentifier: UUID) throws(ModelError) -> [ObjectEdit] {
        var edits: [ObjectEdit] = []
        edits.reserveCapacity(changes.count)
        for change in changes {
            guard let edit = Self.edit(change, in: storeIdentifier) else {
                return try editsOfMessage(in: storeIdentifier)
            }
            edits.append(edit)
        }
        return edits
    }

    /// The edit a change makes; nil when one of its URIs does not read for `storeIdentifier`.
    private static func edit(_ change: Change, in storeIdentifier: UUID) -> ObjectEdit? {
        func id(_ uri: String) -> PersistentIdentifier? { try? PersistentIdentifier(wire: uri, in: storeIdentifier) }
        switch change {
        case .insert(let entity, let attributes, let uri):
            if uri.isEmpty { return .insert(entity: entity, attributes: attributes, relationships: [:], id: nil) }
            return id(uri).map { .insert(entity: entity, attributes: attributes, relationships: [:], id: $0) }
        case .update(let uri, let attributes):
            return id(uri).map { .update($0, attributes: attributes, relationships: [:]) }
        case .delete(let uri): return id(uri).map(ObjectEdit.delete)
        }
    }

    private func editsOfMessage(in storeIdentifier: UUID) throws(ModelError) -> [ObjectEdit] {
        let message: Modeld_V1_ApplyRequest
        do {
            message = try Modeld_V1_ApplyRequest(serializedBytes: bytes)
        } catch {
            throw ModelError(.invalidArgument, "the request does not decode: \(error)")
        }
        return try ObjectEdit.edits(wire: message.changes, in: storeIdentifier)
    }
}

/// Reads the changes of a request (``ApplyRequestFields``). The changes of a request are
/// usually of one entity, so each one's attributes are read into a copy of the previous one's
/// table (``MapTemplate``, as a response's objects are).
private struct ChangeReader {
    private var attributes = MapTemplate<Value>()

    /// A `Change` holding one insert, update or delete; nil for anything else.
    mutating func change(_ reader: ProtobufReader) throws(ModelError) -> ApplyRequestFields.Change? {
        var reader = reader
        guard let (field, type) = try reader.tag(), type == 2 else { return nil }
        let body = try reader.message()
        guard try reader.tag() == nil else { return nil }
        switch field {
        case 1: return try insert(body)
        case 2: return try update(body)
        case 3: return try Self.delete(body)
        default: return nil
        }
    }

    private mutating func insert(_ reader: ProtobufReader) throws(ModelError) -> ApplyRequestFields.Change? {
        var reader = reader
        var entity = "", map = attributes.start(), uri = ""
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): entity = try reader.string()
            case (2, 2): guard try attribute(reader.message(), into: &map) else { return nil }
            case (4, 2): uri = try reader.string()
            default: return nil
            }
        }
        return .insert(entity: entity, attributes: attributes.finish(map), temporaryURI: uri)
    }

    private mutating func update(_ reader: ProtobufReader) throws(ModelError) -> ApplyRequestFields.Change? {
        var reader = reader
        var uri = "", map = attributes.start()
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): uri = try reader.string()
            case (2, 2): guard try attribute(reader.message(), into: &map) else { return nil }
            default: return nil
            }
        }
        return .update(uri: uri, attributes: attributes.finish(map))
    }

    private static func delete(_ reader: ProtobufReader) throws(ModelError) -> ApplyRequestFields.Change? {
        var reader = reader
        var uri = ""
        while let (field, type) = try reader.tag() {
            guard (field, type) == (1, 2) else { return nil }
            uri = try reader.string()
        }
        return .delete(uri: uri)
    }

    /// Reads a map entry of attributes into `map`; false when it is not plain: a key or value
    /// twice, another field, a value with another field or two kinds, or one that does not
    /// parse (a UUID that is not one…). A name is checked as UTF-8 when it is not the
    /// template's (whose names were).
    private func attribute(_ entry: ProtobufReader, into map: inout MapTemplate<Value>.Map) throws(ModelError) -> Bool {
        var entry = entry
        var name: Range<Int>?, value: Value?
        while let (field, type) = try entry.tag() {
            switch (field, type) {
            case (1, 2) where name == nil: name = try entry.stringRange()
            case (2, 2) where value == nil:
                var message = try entry.message()
                value = .null
                while let (field, type) = try message.tag() {
                    guard value == .null, let kind = try? message.valueKind(field, type), kind != .null else {
                        return false
                    }
                    value = kind
                }
            default: return false
            }
        }
        try attributes.set(value ?? .null, nameAt: name ?? 0..<0, of: entry, in: &map)
        return true
    }
}
