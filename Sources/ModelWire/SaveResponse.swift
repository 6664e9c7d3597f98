import Foundation
import ModelCore

/// What a save answers, in ModelCore's types: its result and, when asked for, the history
/// transaction it wrote (the `modeld.v1.SaveResult` message).
public struct SaveResponse: Sendable, Equatable {
    public var result: SaveResult
    public var transaction: HistoryTransaction?
    /// Whether the result's ``SaveResult/insertedRuns`` are answered as runs (`inserted_runs`,
    /// when the request asked) rather than as a `remapped` entry per object.
    public var answersRuns = false

    public init(_ result: SaveResult, transaction: HistoryTransaction? = nil) {
        self.result = result
        self.transaction = transaction
    }

    /// The message.
    public var wire: Modeld_V1_SaveResult {
        Modeld_V1_SaveResult(result, transaction: transaction, answersRuns: answersRuns)
    }

    /// The message's bytes, its map of temporary to permanent URIs written by hand: building
    /// the message first made two strings per inserted object and a map of them, and
    /// SwiftProtobuf then wrote the map (about half a second for 100,000 objects).
    public func serializedBytes() throws -> [UInt8] {
        var prefix: PersistentIdentifier.URIPrefix?
        return try serializedBytes(uriPrefix: &prefix)
    }

    /// ``serializedBytes()``, starting from `uriPrefix`, the store and entity part of a URI
    /// written before (the daemon keeps its store's last one), and leaving there the last URI's:
    /// a one-object save's answer then does not spell its store's UUID out again (about 2,200
    /// instructions). A prefix of another store or entity is replaced, as ``serializedBytes()``
    /// would make it. Its bytes are written as they are: give it only prefixes made by writing
    /// URIs (one read from a request keeps the client's spelling, a UUID in capitals too).
    public func serializedBytes(uriPrefix: inout PersistentIdentifier.URIPrefix?) throws -> [UInt8] {
        var writer = ProtobufWriter(uriPrefix: uriPrefix)
        defer { uriPrefix = writer.uriPrefix }
        writer.bytes.reserveCapacity(estimatedSize)
        for (temporary, permanent) in result.remappedIdentifiers {
            writer.message(1) { entry in
                entry.uri(1, temporary)
                entry.uri(2, permanent)
            }
        }
        for run in result.insertedRuns where !answersRuns {
            run.identifiers { temporary, permanent in
                writer.message(1) { entry in
                    entry.uri(1, temporary)
                    entry.uri(2, permanent)
                }
            }
        }
        if let token = result.token {
            writer.tag(2, 0)
            writer.varint(UInt64(bitPattern: token.rawValue))
        }
        for run in result.insertedRuns where answersRuns {
            writer.message(5) { entry in
                entry.uri(1, run.firstIdentifier)
                entry.tag(2, 0)
                entry.varint(UInt64(run.count))
            }
        }
        // Updated objects only: an inserted one is at 1.
        for (id, version) in result.versions where version > 1 {
            writer.message(6) { entry in
                entry.uri(1, id)
                entry.tag(2, 0)
                entry.varint(UInt64(bitPattern: version))
            }
        }
        guard let transaction else { return writer.bytes }
        // The transaction's fields (3 and 4) follow as SwiftProtobuf writes them: a message's
        // bytes followed by another's read as the two merged.
        let rest: [UInt8] = try Modeld_V1_SaveResult(SaveResult(), transaction: transaction).serializedBytes()
        return writer.bytes + rest
    }
}

extension SaveResponse {
    /// About how many bytes ``serializedBytes()`` writes without the transaction (a URI rarely
    /// passes 70 bytes), at most a MiB: room made once rather than grown four times for a
    /// one-object save. A larger answer grows from there.
    fileprivate var estimatedSize: Int {
        let perEntry = 150, perRun = 90
        var entries = result.remappedIdentifiers.count, runs = 0
        for run in result.insertedRuns {
            if answersRuns { runs += 1 } else { entries += run.count }
        }
        return min(16 + entries * perEntry + runs * perRun, 1 << 20)
    }
}

/// A `SaveResult` message read straight from its bytes into ModelCore's types (the client's
/// side of ``SaveResponse/serializedBytes()``), URIs checked against `store` when given.
public struct SaveResultFields: Sendable {
    public private(set) var remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier] = [:]
    /// Objects saved from runs, answered as runs (asked for by ``ApplyCall/answerRuns``): not
    /// in ``remappedIdentifiers``.
    public private(set) var insertedRuns: [InsertedRun] = []
    public private(set) var token: HistoryToken?
    public private(set) var transaction: HistoryTransaction?
    public private(set) var transactionIsTruncated = false
    /// The versions of the objects the save updated (`versions`).
    public private(set) var versions: [PersistentIdentifier: Int64] = [:]

    private init() {}

    public init(serialized bytes: [UInt8], in store: UUID?) throws(ModelError) {
        var fields = SaveResultFields()
        // A message field written twice reads as the two merged: its pieces are read as one.
        let transactionBytes = try ProtobufReader.reading(bytes) { (reader) throws(ModelError) -> [UInt8]? in
            var transactionBytes: [UInt8]?
            // Room for every identifier at once: a table grown one insert at a time moved each
            // entry about twice, a fifth of reading a large save's answer.
            var counter = reader, entries = 0
            while let (field, type) = try counter.tag() {
                if field == 1 { entries += 1 }
                try counter.skip(type)
            }
            // Only when there are any: reserving room for none still cost a one-object save's
            // answer about 1,400 instructions (a type's metadata looked up by its name, callgrind).
            if entries > 0 { fields.remappedIdentifiers.reserveCapacity(entries) }
            // Temporary and permanent URIs usually differ only in their keys.
            var uriPrefix: PersistentIdentifier.URIPrefix?
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
                    fields.remappedIdentifiers[try entry.identifier(in: temporary, store: store, prefix: &uriPrefix)] =
                        try entry.identifier(in: permanent, store: store, prefix: &uriPrefix)
                case (5, 2):
                    var entry = try reader.message()
                    var first = 0..<0, count: UInt64 = 0
                    while let (field, type) = try entry.tag() {
                        switch (field, type) {
                        case (1, 2): first = try entry.stringRange()
                        case (2, 0): count = try entry.varint()
                        default: try entry.skip(type)
                        }
                    }
                    let id = try entry.identifier(in: first, store: store, prefix: &uriPrefix)
                    guard let key = id.primaryKey, key >= 0, count <= UInt64(Int64.max - key) else {
                        throw ProtobufReader.malformed("a run of \(count) objects from \(id.uriRepresentation)")
                    }
                    fields.insertedRuns.append(
                        InsertedRun(
                            storeIdentifier: id.storeIdentifier, entityName: id.entityName, firstKey: key,
                            count: Int(count)))
                case (6, 2):
                    var entry = try reader.message()
                    var uri = 0..<0, version: UInt64 = 0
                    while let (field, type) = try entry.tag() {
                        switch (field, type) {
                        case (1, 2): uri = try entry.stringRange()
                        case (2, 0): version = try entry.varint()
                        default: try entry.skip(type)
                        }
                    }
                    fields.versions[try entry.identifier(in: uri, store: store, prefix: &uriPrefix)] =
                        Int64(bitPattern: version)
                case (2, 0): fields.token = HistoryToken(Int64(bitPattern: try reader.varint()))
                case (3, 2): transactionBytes = (transactionBytes ?? []) + (try reader.lengthDelimitedBytes())
                case (4, 0): fields.transactionIsTruncated = try reader.varint() != 0
                default: try reader.skip(type)
                }
            }
            return transactionBytes
        }
        self = fields
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
