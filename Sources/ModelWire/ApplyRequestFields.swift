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
    public private(set) var answerRuns = false
    private var changes: [Change] = []
    private let bytes: [UInt8]

    /// One change, its URIs left as text until the store is known (``edits(in:)``).
    enum Change: Sendable {
        case insert(entity: String, attributes: [String: Value], temporaryURI: String)
        case update(uri: String, attributes: [String: Value])
        case delete(uri: String)
        /// Consecutive inserts of one entity, without temporary URIs, naming the same attributes.
        case inserts(InsertRun)
    }

    /// Reads a request in the plain form; nil for any other (see the type's description).
    public init?(serialized bytes: [UInt8]) {
        let plain = try? ProtobufReader.reading(bytes) { (reader) throws(ModelError) -> ApplyRequestFields? in
            var fields = ApplyRequestFields(bytes: bytes)
            var changes: [ProtobufReader] = []
            while let (field, type) = try reader.tag() {
                switch (field, type) {
                case (1, 2): fields.store = try reader.string()
                case (2, 2): fields.author = try reader.string()
                case (3, 0):
                    let number = Int(Int32(truncatingIfNeeded: try reader.varint()))
                    fields.uniquenessPolicy = Modeld_V1_UniquenessPolicy(rawValue: number) ?? .UNRECOGNIZED(number)
                case (4, 2): changes.append(try reader.message())
                case (5, 0): fields.returnTransaction = try reader.varint() != 0
                case (6, 0): fields.answerRuns = try reader.varint() != 0
                default: return nil
                }
            }
            guard let read = Self.read(changes[...]) else { return nil }
            fields.changes = read
            return fields
        }
        guard let plain else { return nil }
        self = plain
    }

    /// The most changes read on one thread: a request with more (a bulk load) is read in two
    /// halves at once, each on a core of its own, as long as reading it takes (its inserts into
    /// runs cost about 8 µs an object). The halves' runs follow one another as read.
    public static let changesReadOnOneThread = 8_192

    /// `changes` read in order; nil when one is not in the plain form or does not read.
    private static func read(_ changes: ArraySlice<ProtobufReader>) -> [Change]? {
        guard changes.count > changesReadOnOneThread else { return readInOrder(changes) }
        // The readers point into the request's bytes, which outlive both halves.
        let halves = bothHalves(of: changes) { readInOrder($0) }
        guard let first = halves[0], let second = halves[1] else { return nil }
        return first + second
    }

    private static func readInOrder(_ changes: ArraySlice<ProtobufReader>) -> [Change]? {
        var reader = ApplyChangeReader()
        for change in changes {
            guard (try? reader.read(change)) == true else { return nil }
        }
        return reader.finish()
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The changes as runs of inserts, when they are plain inserts alone (without temporary URIs):
    /// what ``ModelContainer/saveInsertRuns`` saves without a table of values per object. Nil
    /// for no changes or any other.
    public var insertRuns: [InsertRun]? {
        var runs: [InsertRun] = []
        for change in changes {
            guard case .inserts(let run) = change else { return nil }
            runs.append(run)
        }
        return runs.isEmpty ? nil : runs
    }

    /// The changes as edits, their URIs checked against `storeIdentifier`. Errors are
    /// `ObjectEdit.edits(wire:in:)`'s: when a URI does not read, the request's message reads
    /// them, and says which change is wrong and why.
    public func edits(in storeIdentifier: UUID) throws(ModelError) -> [ObjectEdit] {
        var edits: [ObjectEdit] = []
        edits.reserveCapacity(
            changes.reduce(0) { count, change in
                if case .inserts(let run) = change { count + run.count } else { count + 1 }
            })
        for change in changes {
            if case .inserts(let run) = change {
                for index in 0..<run.count {
                    edits.append(
                        .insert(
                            entity: run.entityName, attributes: run.attributes(ofRow: index), relationships: [:],
                            id: nil))
                }
                continue
            }
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
        case .inserts: return nil // Runs are expanded by `edits(in:)`, which never asks for them.
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
