import Foundation
import ModelCore

/// An `Apply` request in ModelCore's types (the client's side of ``ApplyRequestFields``).
public struct ApplyCall: Sendable {
    public var store: String
    public var author: String?
    public var uniquenessPolicy: UniquenessPolicy
    public var edits: [ObjectEdit]
    public var returnTransaction: Bool

    public init(store: String, author: String?, uniquenessPolicy: UniquenessPolicy, edits: [ObjectEdit], returnTransaction: Bool) {
        self.store = store
        self.author = author
        self.uniquenessPolicy = uniquenessPolicy
        self.edits = edits
        self.returnTransaction = returnTransaction
    }

    /// The message.
    public var wire: Modeld_V1_ApplyRequest {
        Modeld_V1_ApplyRequest.with {
            $0.store = store
            $0.author = author ?? ""
            $0.uniquenessPolicy = uniquenessPolicy.wire
            $0.changes = edits.map(\.wire)
            $0.returnTransaction = returnTransaction
        }
    }

    /// The message's bytes, its inserts, updates and deletes written by hand (any other change,
    /// or one with relationships, as SwiftProtobuf writes it): building a message per change and
    /// per value, then writing them, cost a client about a third of a second for 100,000 inserts.
    public func serializedBytes() throws -> [UInt8] {
        var writer = ProtobufWriter()
        if !store.isEmpty { writer.string(1, store) }
        if let author, !author.isEmpty { writer.string(2, author) }
        if uniquenessPolicy.wire != .error {
            writer.tag(3, 0)
            writer.varint(UInt64(bitPattern: Int64(uniquenessPolicy.wire.rawValue)))
        }
        for edit in edits {
            switch edit {
            case .insert(let entity, let attributes, let relationships, let id) where relationships.isEmpty:
                writer.message(4) { change in
                    change.message(1) { insert in
                        if !entity.isEmpty { insert.string(1, entity) }
                        insert.attributes(2, attributes)
                        if let id { insert.uri(4, id) }
                    }
                }
            case .update(let id, let attributes, let relationships) where relationships.isEmpty:
                writer.message(4) { change in
                    change.message(2) { update in
                        update.uri(1, id)
                        update.attributes(2, attributes)
                    }
                }
            case .delete(let id):
                writer.message(4) { change in change.message(3) { $0.uri(1, id) } }
            default:
                let change: [UInt8] = try edit.wire.serializedBytes()
                writer.tag(4, 2)
                writer.varint(UInt64(change.count))
                writer.bytes += change
            }
        }
        if returnTransaction {
            writer.tag(5, 0)
            writer.varint(1)
        }
        return writer.bytes
    }
}

/// A `SaveResult` message read straight from its bytes into ModelCore's types (the client's
/// side of ``SaveResponse/serializedBytes()``), URIs checked against `store` when given.
public struct SaveResultFields: Sendable {
    public private(set) var remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier] = [:]
    public private(set) var token: HistoryToken?
    public private(set) var transaction: HistoryTransaction?
    public private(set) var transactionIsTruncated = false

    public init(serialized bytes: [UInt8], in store: UUID?) throws(ModelError) {
        var reader = ProtobufReader(bytes, in: 0..<bytes.count)
        // A message field written twice reads as the two merged: its pieces are read as one.
        var transactionBytes: [UInt8]?
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2):
                var entry = try reader.message()
                var temporary = 0..<0, permanent = 0..<0
                while let (field, type) = try entry.tag() {
                    switch (field, type) {
                    case (1, 2): temporary = try entry.stringRange()
                    case (2, 2): permanent = try entry.stringRange()
                    default: try entry.skip(type)
                    }
                }
                remappedIdentifiers[try entry.identifier(in: temporary, store: store)] = try entry.identifier(in: permanent, store: store)
            case (2, 0): token = HistoryToken(Int64(bitPattern: try reader.varint()))
            case (3, 2): transactionBytes = (transactionBytes ?? []) + (try reader.lengthDelimitedBytes())
            case (4, 0): transactionIsTruncated = try reader.varint() != 0
            default: try reader.skip(type)
            }
        }
        if let transactionBytes {
            let message: Modeld_V1_HistoryTransaction
            do {
                message = try Modeld_V1_HistoryTransaction(serializedBytes: transactionBytes)
            } catch {
                throw ProtobufReader.malformed("the transaction does not decode: \(error)")
            }
            transaction = try HistoryTransaction(wire: message, in: store)
        }
    }
}
