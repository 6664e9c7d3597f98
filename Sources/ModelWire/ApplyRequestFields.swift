import Foundation
import ModelCore

/// An `ApplyRequest` read straight from its bytes into ModelCore's types, for the daemon: SwiftProtobuf
/// builds a message per change and per value, and maps of them, which cost a one-object save
/// about 5 µs and a 100,000-object one most of a second.
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
    private enum Change: Sendable {
        case insert(entity: String, attributes: [String: Value], temporaryURI: String)
        case update(uri: String, attributes: [String: Value])
        case delete(uri: String)
    }

    /// Reads a request in the plain form; nil for any other (see the type's description).
    public init?(serialized bytes: [UInt8]) {
        self.bytes = bytes
        do {
            var reader = ProtobufReader(bytes, in: 0..<bytes.count)
            while let (field, type) = try reader.tag() {
                switch (field, type) {
                case (1, 2): store = try reader.string()
                case (2, 2): author = try reader.string()
                case (3, 0):
                    let number = Int(Int32(truncatingIfNeeded: try reader.varint()))
                    uniquenessPolicy = Modeld_V1_UniquenessPolicy(rawValue: number) ?? .UNRECOGNIZED(number)
                case (4, 2):
                    guard let change = try Self.change(reader.message()) else { return nil }
                    changes.append(change)
                case (5, 0): returnTransaction = try reader.varint() != 0
                default: return nil
                }
            }
        } catch {
            return nil
        }
    }

    /// The changes as edits, their URIs checked against `storeIdentifier`. Errors are
    /// `ObjectEdit.edits(wire:in:)`'s: when a URI does not read, the request's message reads
    /// them, and says which change is wrong and why.
    public func edits(in storeIdentifier: UUID) throws(ModelError) -> [ObjectEdit] {
        var edits: [ObjectEdit] = []
        edits.reserveCapacity(changes.count)
        for change in changes {
            switch change {
            case .insert(let entity, let attributes, let uri):
                var id: PersistentIdentifier?
                if !uri.isEmpty {
                    guard let temporary = Self.identifier(uri, in: storeIdentifier) else { return try editsOfMessage(in: storeIdentifier) }
                    id = temporary
                }
                edits.append(.insert(entity: entity, attributes: attributes, relationships: [:], id: id))
            case .update(let uri, let attributes):
                guard let id = Self.identifier(uri, in: storeIdentifier) else { return try editsOfMessage(in: storeIdentifier) }
                edits.append(.update(id, attributes: attributes, relationships: [:]))
            case .delete(let uri):
                guard let id = Self.identifier(uri, in: storeIdentifier) else { return try editsOfMessage(in: storeIdentifier) }
                edits.append(.delete(id))
            }
        }
        return edits
    }

    private static func identifier(_ uri: String, in storeIdentifier: UUID) -> PersistentIdentifier? {
        try? PersistentIdentifier(wire: uri, in: storeIdentifier)
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

    /// A `Change` holding one insert, update or delete; nil for anything else.
    private static func change(_ reader: ProtobufReader) throws(ModelError) -> Change? {
        var reader = reader
        guard let (field, type) = try reader.tag(), type == 2 else { return nil }
        let body = try reader.message()
        guard try reader.tag() == nil else { return nil }
        switch field {
        case 1: return try insert(body)
        case 2: return try update(body)
        case 3: return try delete(body)
        default: return nil
        }
    }

    private static func insert(_ reader: ProtobufReader) throws(ModelError) -> Change? {
        var reader = reader
        var entity = "", attributes: [String: Value] = [:], uri = ""
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): entity = try reader.string()
            case (2, 2): guard try attribute(reader.message(), into: &attributes) else { return nil }
            case (4, 2): uri = try reader.string()
            default: return nil
            }
        }
        return .insert(entity: entity, attributes: attributes, temporaryURI: uri)
    }

    private static func update(_ reader: ProtobufReader) throws(ModelError) -> Change? {
        var reader = reader
        var uri = "", attributes: [String: Value] = [:]
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): uri = try reader.string()
            case (2, 2): guard try attribute(reader.message(), into: &attributes) else { return nil }
            default: return nil
            }
        }
        return .update(uri: uri, attributes: attributes)
    }

    private static func delete(_ reader: ProtobufReader) throws(ModelError) -> Change? {
        var reader = reader
        var uri = ""
        while let (field, type) = try reader.tag() {
            guard (field, type) == (1, 2) else { return nil }
            uri = try reader.string()
        }
        return .delete(uri: uri)
    }

    /// Reads a map entry of attributes into `attributes`; false when it is not plain: a key or
    /// value twice, another field, a value with another field or two kinds, or one that does
    /// not parse (a UUID that is not one…).
    private static func attribute(_ reader: ProtobufReader, into attributes: inout [String: Value]) throws(ModelError) -> Bool {
        var reader = reader
        var name: String?, value: Value?
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2) where name == nil: name = try reader.string()
            case (2, 2) where value == nil:
                var message = try reader.message()
                value = .null
                while let (field, type) = try message.tag() {
                    guard value == .null, let kind = try? message.valueKind(field, type), kind != .null else { return false }
                    value = kind
                }
            default: return false
            }
        }
        attributes[name ?? ""] = value ?? .null
        return true
    }
}
