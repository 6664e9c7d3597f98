import Foundation
import ModelCore

/// An `Apply` request in ModelCore's types (the client's side of ``ApplyRequestFields``).
public struct ApplyCall: Sendable {
    public var store: String
    public var author: String?
    public var uniquenessPolicy: UniquenessPolicy
    public var edits: [ObjectEdit]
    public var returnTransaction: Bool
    /// Whether objects saved from runs are answered as runs (`answer_runs`; see
    /// ``SaveResultFields/insertedRuns``).
    public var answerRuns: Bool

    public init(
        store: String, author: String?, uniquenessPolicy: UniquenessPolicy, edits: [ObjectEdit],
        returnTransaction: Bool,
        answerRuns: Bool = true
    ) {
        self.store = store
        self.author = author
        self.uniquenessPolicy = uniquenessPolicy
        self.edits = edits
        self.returnTransaction = returnTransaction
        self.answerRuns = answerRuns
    }

    /// The message.
    public var wire: Modeld_V1_ApplyRequest {
        Modeld_V1_ApplyRequest.with {
            $0.store = store
            $0.author = author ?? ""
            $0.uniquenessPolicy = uniquenessPolicy.wire
            $0.changes = edits.map(\.wire)
            $0.returnTransaction = returnTransaction
            $0.answerRuns = answerRuns
        }
    }

    /// The message's bytes, its inserts, updates and deletes written by hand (any other change,
    /// or one with relationships, as SwiftProtobuf writes it): building a message per change and
    /// per value, then writing them, cost a client about a third of a second for 100,000 inserts.
    /// More than ``ApplyRequestFields/changesReadOnOneThread`` changes (a bulk load) are written
    /// in two halves at once, each on a core of its own, as the daemon reads them.
    public func serializedBytes() throws -> [UInt8] {
        var writer = ProtobufWriter()
        if !store.isEmpty { writer.string(1, store) }
        if let author, !author.isEmpty { writer.string(2, author) }
        if uniquenessPolicy.wire != .error {
            writer.tag(3, 0)
            writer.varint(UInt64(bitPattern: Int64(uniquenessPolicy.wire.rawValue)))
        }
        if edits.count > ApplyRequestFields.changesReadOnOneThread {
            let halves = bothHalves(of: edits[...]) { part in
                Result { () throws -> [UInt8] in
                    var half = ProtobufWriter()
                    try Self.write(part, to: &half)
                    return half.bytes
                }
            }
            for half in halves { writer.bytes += try half.get() }
        } else {
            try Self.write(edits[...], to: &writer)
        }
        if returnTransaction {
            writer.tag(5, 0)
            writer.varint(1)
        }
        if answerRuns {
            writer.tag(6, 0)
            writer.varint(1)
        }
        return writer.bytes
    }

    /// Writes `edits` as the message's `changes` fields.
    private static func write(_ edits: ArraySlice<ObjectEdit>, to writer: inout ProtobufWriter) throws {
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
                writer.message(4) { $0.bytes += change }
            }
        }
    }
}
