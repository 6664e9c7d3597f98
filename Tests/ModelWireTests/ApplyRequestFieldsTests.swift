import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// The daemon's hand reading of `ApplyRequest` against SwiftProtobuf's: whatever it reads, it
/// reads as the generated message and `ObjectEdit.edits(wire:in:)` do, errors included; what it
/// leaves to SwiftProtobuf is left whole.
@Suite struct ApplyRequestFieldsTests {
    static let store = UUID()

    /// What the daemon makes of a request's bytes: refused as they do not decode, or its fields
    /// and its edits (or the error converting them).
    enum Reading: Equatable {
        case refused
        case request(
            store: String, author: String, policy: Modeld_V1_UniquenessPolicy, returnTransaction: Bool,
            edits: Result<[ObjectEdit], ModelError>)
    }

    /// SwiftProtobuf's reading.
    static func theirs(_ bytes: [UInt8]) -> Reading {
        guard let message = try? Modeld_V1_ApplyRequest(serializedBytes: bytes) else { return .refused }
        return .request(
            store: message.store, author: message.author, policy: message.uniquenessPolicy,
            returnTransaction: message.returnTransaction,
            edits: Result { () throws(ModelError) in try ObjectEdit.edits(wire: message.changes, in: store) })
    }

    /// The hand reading, or nil where it leaves the request to SwiftProtobuf.
    static func ours(_ bytes: [UInt8]) -> Reading? {
        guard let fields = ApplyRequestFields(serialized: bytes) else { return nil }
        return .request(
            store: fields.store, author: fields.author, policy: fields.uniquenessPolicy,
            returnTransaction: fields.returnTransaction,
            edits: Result { () throws(ModelError) in try fields.edits(in: store) })
    }

    static func uri(_ random: inout SeededRandom) -> String {
        switch random.int(0...9) {
        case 0: PersistentIdentifier(storeIdentifier: UUID(), entityName: "Trip", key: .permanent(7)).uriRepresentation
        case 1: "not a uri"
        case 2: ""
        case 3: PersistentIdentifier.temporary(storeIdentifier: store, entityName: "Trip").uriRepresentation
        default:
            PersistentIdentifier(
                storeIdentifier: store, entityName: "Trip", key: .permanent(Int64(random.int(1...1_000_000)))
            ).uriRepresentation
        }
    }

    static func randomRequest(_ random: inout SeededRandom) -> Modeld_V1_ApplyRequest {
        func attributes() -> [String: Value] {
            var attributes: [String: Value] = [:]
            for name in ["name", "bé", "", "score"] where random.chance(0.6) {
                attributes[name] = random.pick(WireConversionTests.values)
            }
            return attributes
        }
        var request = Modeld_V1_ApplyRequest()
        request.store = random.pick(["items", "", "é store"])
        request.author = random.chance(0.5) ? "" : "importer"
        request.uniquenessPolicy = random.pick([.error, .upsert, .UNRECOGNIZED(7), .UNRECOGNIZED(-1)])
        request.returnTransaction = random.chance(0.3)
        for _ in 0..<random.int(0...6) {
            let edit: ObjectEdit
            switch random.int(0...2) {
            case 0:
                let id =
                    random.chance(0.3)
                    ? PersistentIdentifier.temporary(storeIdentifier: store, entityName: "Trip") : nil
                edit = .insert(
                    entity: random.pick(["Trip", "Stop", ""]), attributes: attributes(), relationships: [:], id: id)
            case 1:
                edit = .update(
                    PersistentIdentifier(storeIdentifier: store, entityName: "Trip", key: .permanent(1)),
                    attributes: attributes(),
                    relationships: [:])
            default:
                edit = .delete(PersistentIdentifier(storeIdentifier: store, entityName: "Trip", key: .permanent(1)))
            }
            var change = edit.wire
            // URIs of every kind: of this store, of another, temporary, empty, not URIs.
            switch change.kind {
            case .update(var update)?:
                update.uri = uri(&random)
                change.update = update
            case .delete(var delete)?:
                delete.uri = uri(&random)
                change.delete = delete
            case .insert(var insert)? where random.chance(0.2):
                insert.temporaryUri = uri(&random)
                change.insert = insert
            default: break
            }
            request.changes.append(change)
        }
        return request
    }

    /// Requests of inserts, updates and deletes with every kind of value and URI are read by
    /// hand, and read as SwiftProtobuf reads them: the same fields, the same edits or the same
    /// error (a URI of another store, one that is not a URI…).
    @Test(arguments: 1...40)
    func plainRequestsAreReadAsSwiftProtobufReadsThem(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<10 {
            let bytes: [UInt8] = try Self.randomRequest(&random).serializedBytes()
            let ours = try #require(Self.ours(bytes))
            #expect(ours == Self.theirs(bytes))
        }
    }

    /// Every prefix of a request's bytes is refused where SwiftProtobuf refuses it, and read as
    /// it reads it otherwise; nothing crashes.
    @Test func truncatedRequestsAreReadAsSwiftProtobufReadsThem() throws {
        var random = SeededRandom(seed: 3)
        var request = Self.randomRequest(&random)
        while request.changes.count < 3 { request = Self.randomRequest(&random) }
        let bytes: [UInt8] = try request.serializedBytes()
        var readByHand = 0
        for length in 0...bytes.count {
            let prefix = Array(bytes.prefix(length))
            let theirs = Self.theirs(prefix)
            if let ours = Self.ours(prefix) {
                #expect(ours == theirs, "prefix of \(length) bytes")
                readByHand += 1
            }
        }
        // The prefixes that end between fields are read by hand; those that cut one are not.
        #expect(readByHand > 0 && readByHand < bytes.count / 2)
    }

    /// Requests in any other form are left to SwiftProtobuf: a relationship, an add or remove, a
    /// field it does not know, a change with two kinds, a value with two kinds or of another
    /// wire type, text that is not UTF-8, a value that does not parse.
    @Test func requestsInAnyOtherFormAreLeftToSwiftProtobuf() throws {
        let id = PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(1))
        let insert = ObjectEdit.insert(
            entity: "Trip", attributes: ["name": .string("Kyoto")], relationships: [:], id: nil)
        func request(_ changes: [Modeld_V1_Change]) throws -> [UInt8] {
            try Modeld_V1_ApplyRequest.with {
                $0.store = "items"; $0.changes = changes
            }.serializedBytes()
        }
        let plain = try request([insert.wire])
        #expect(Self.ours(plain) != nil)

        var others: [[UInt8]] = [
            try request([
                ObjectEdit.insert(entity: "Trip", attributes: [:], relationships: ["owner": .toOne(id)], id: nil).wire
            ]),
            try request([ObjectEdit.add([id], relationship: "stops", of: id).wire]),
            try request([ObjectEdit.remove([id], relationship: "stops", of: id).wire]),
            try request([Modeld_V1_Change()]),
            try request(
                [ObjectEdit.insert(entity: "Trip", attributes: ["id": .null], relationships: [:], id: nil).wire].map {
                    change in
                    var change = change
                    change.insert.attributes["id"] = Modeld_V1_Value.with { $0.uuidValue = "not-a-uuid" }
                    return change
                }),
            // Field 99 (a varint) at the top.
            plain + [0x98, 0x06, 0x01],
        ]
        // A change whose insert comes twice (protobuf merges them).
        var twice: [UInt8] = try insert.wire.serializedBytes()
        twice += twice
        others.append([0x22] + FetchResponseCodingTests.varint(twice.count) + twice)
        // A value with a string and then an int: one entry whose value has two kinds.
        let entry: [UInt8] = [0x0A, 0x01, 0x61, 0x12, 0x05, 0x0A, 0x01, 0x62, 0x10, 0x02]
        let insertBody: [UInt8] =
            [0x0A, 0x04] + Array("Trip".utf8) + [0x12] + FetchResponseCodingTests.varint(entry.count) + entry
        let change: [UInt8] = [0x0A] + FetchResponseCodingTests.varint(insertBody.count) + insertBody
        others.append([0x22] + FetchResponseCodingTests.varint(change.count) + change)
        // An attribute named with bytes that are not UTF-8, after an insert whose names are
        // valid (the names of one insert are matched against the previous one's by their bytes).
        let badName: [UInt8] = [0x0A, 0x02, 0xC3, 0x28, 0x12, 0x02, 0x10, 0x02]
        let badInsert: [UInt8] =
            [0x0A, 0x04] + Array("Trip".utf8) + [0x12] + FetchResponseCodingTests.varint(badName.count) + badName
        let badChange: [UInt8] = [0x0A] + FetchResponseCodingTests.varint(badInsert.count) + badInsert
        others.append(plain + [0x22] + FetchResponseCodingTests.varint(badChange.count) + badChange)
        // The store's name as a varint; then as bytes that are not UTF-8.
        others.append([0x08, 0x01])
        others.append([0x0A, 0x02, 0xC3, 0x28])

        for (index, bytes) in others.enumerated() {
            #expect(Self.ours(bytes) == nil, "request \(index)")
        }
        #expect(Self.theirs(others[others.count - 1]) == .refused)
    }

    /// Requests a client writes by hand read, through SwiftProtobuf, as the message built from
    /// the same call: inserts, updates and deletes with any values, and the changes it leaves
    /// to SwiftProtobuf (relationships, adds, removes). The daemon reads them by hand when
    /// they have no such change, with the edits the client sent.
    @Test(arguments: 1...30)
    func handWrittenRequestsReadAsTheMessage(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        func id() -> PersistentIdentifier {
            random.chance(0.3)
                ? .temporary(storeIdentifier: Self.store, entityName: "Trip")
                : PersistentIdentifier(
                    storeIdentifier: Self.store, entityName: random.pick(["Trip", "Stop"]),
                    key: .permanent(Int64(random.int(1...1_000_000))))
        }
        func attributes() -> [String: Value] {
            var attributes: [String: Value] = [:]
            for name in ["name", "bé", "", "score"] where random.chance(0.6) {
                attributes[name] = random.pick(WireConversionTests.values)
            }
            return attributes
        }
        func relationships() -> [String: RelationshipValue] {
            random.chance(0.8)
                ? [:] : ["owner": .toOne(random.chance(0.5) ? nil : id()), "stops": .toMany([id(), id()])]
        }
        var edits: [ObjectEdit] = []
        for _ in 0..<random.int(0...8) {
            switch random.int(0...9) {
            case 0...3:
                edits.append(
                    .insert(
                        entity: random.pick(["Trip", ""]), attributes: attributes(), relationships: relationships(),
                        id: random.chance(0.5) ? .temporary(storeIdentifier: Self.store, entityName: "Trip") : nil))
            case 4...5: edits.append(.update(id(), attributes: attributes(), relationships: relationships()))
            case 6...7: edits.append(.delete(id()))
            case 8: edits.append(.add([id()], relationship: "stops", of: id()))
            default: edits.append(.remove([id(), id()], relationship: "stops", of: id()))
            }
        }
        let call = ApplyCall(
            store: random.pick(["items", "", "é"]), author: random.pick([nil, "", "importer"]),
            uniquenessPolicy: random.pick([.error, .upsert]), edits: edits, returnTransaction: random.chance(0.5))
        let bytes = try call.serializedBytes()
        #expect(try Modeld_V1_ApplyRequest(serializedBytes: bytes) == call.wire)
        let plain = edits.allSatisfy { edit in
            switch edit {
            case .insert(_, _, let relationships, _), .update(_, _, let relationships): relationships.isEmpty
            case .delete: true
            case .add, .remove, .expectVersion: false
            }
        }
        let fields = ApplyRequestFields(serialized: bytes)
        #expect((fields != nil) == plain)
        if let fields { #expect(try fields.edits(in: Self.store) == edits) }
    }

    /// A URI the store does not own fails with `ObjectEdit.edits(wire:in:)`'s error, naming the
    /// change, as the generated message's conversion says it.
    @Test func aURIOfAnotherStoreFailsAsTheMessageConversionFails() throws {
        let other = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Trip", key: .permanent(3))
        let mine = PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(3))
        let bytes: [UInt8] = try Modeld_V1_ApplyRequest.with {
            $0.store = "items"
            $0.changes = [ObjectEdit.delete(mine).wire, ObjectEdit.delete(other).wire]
        }.serializedBytes()
        let fields = try #require(ApplyRequestFields(serialized: bytes))
        let error = try #require(throws: ModelError.self) { try fields.edits(in: Self.store) }
        let expected = try #require(throws: ModelError.self) {
            try ObjectEdit.edits(wire: try Modeld_V1_ApplyRequest(serializedBytes: bytes).changes, in: Self.store)
        }
        #expect(error == expected)
        #expect(error.message.hasPrefix("change 2"))
    }

    /// Plain inserts are read into runs: one per stretch of inserts of one entity naming the same
    /// attributes, in whatever order, each object's values in the run's column order. An insert
    /// with a temporary URI, or any other change, leaves the request without runs; its edits are
    /// the same either way.
    @Test func plainInsertsAreReadIntoRuns() throws {
        func insert(_ entity: String, _ attributes: [String: Value], id: PersistentIdentifier? = nil) -> ObjectEdit {
            .insert(entity: entity, attributes: attributes, relationships: [:], id: id)
        }
        func fields(_ edits: [ObjectEdit]) throws -> ApplyRequestFields {
            let call = ApplyCall(
                store: "s", author: nil, uniquenessPolicy: .error, edits: edits, returnTransaction: false)
            return try #require(ApplyRequestFields(serialized: try call.serializedBytes()))
        }
        // Names written in both orders: a map's order is its own, so the second pair is reversed
        // by hand after the first wrote them.
        var edits = [
            insert("Trip", ["name": .string("a"), "score": .int(1), "é": .null]),
            insert("Trip", ["score": .int(2), "é": .bool(true), "name": .string("b")]),
            insert("Trip", ["name": .string("c")]),
            insert("Stop", [:]),
            insert("Stop", [:]),
            insert("Trip", ["name": .string("d")]),
        ]
        for _ in 0..<20 { edits.append(insert("Trip", ["name": .string("e"), "score": .int(5), "é": .double(1.5)])) }
        let plain = try fields(edits)
        let runs = try #require(plain.insertRuns)
        #expect(runs.map(\.entityName) == ["Trip", "Trip", "Stop", "Trip", "Trip"])
        #expect(runs.map(\.count) == [2, 1, 2, 1, 20])
        #expect(
            runs.map { Set($0.columns) } == [["name", "score", "é"], ["name"], [], ["name"], ["name", "score", "é"]])
        var objects: [ObjectEdit] = []
        for run in runs {
            for row in 0..<run.count { objects.append(insert(run.entityName, run.attributes(ofRow: row))) }
        }
        #expect(objects == edits)
        #expect(try plain.edits(in: Self.store) == edits)

        let withURI = edits + [insert("Trip", [:], id: .temporary(storeIdentifier: Self.store, entityName: "Trip"))]
        let update =
            edits + [
                ObjectEdit.update(
                    PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(1)),
                    attributes: ["name": .string("x")], relationships: [:])
            ]
        for other in [withURI, update] {
            let read = try fields(other)
            #expect(read.insertRuns == nil)
            #expect(try read.edits(in: Self.store) == other)
        }
        // A name written twice (two map entries, one insert): the last value wins, as in a map,
        // and the insert is no run.
        func entry(_ text: String) throws -> [UInt8] {
            try Modeld_V1_Insert.with {
                $0.attributes = ["name": Modeld_V1_Value.with { $0.stringValue = text }]
            }.serializedBytes()
        }
        let insertBytes =
            try Modeld_V1_Insert.with { $0.entity = "Trip" }.serializedBytes() + entry("first") + entry("last")
        let changeBytes = [0x0A, UInt8(insertBytes.count)] + insertBytes
        let twice = [0x22, UInt8(changeBytes.count)] + changeBytes
        let read = try #require(ApplyRequestFields(serialized: twice))
        #expect(read.insertRuns == nil)
        #expect(try read.edits(in: Self.store) == [insert("Trip", ["name": .string("last")])])
        #expect(Self.ours(twice) == Self.theirs(twice))
    }

    /// A request of more changes than one thread reads (a bulk load) is read in two halves at
    /// once, and read as SwiftProtobuf reads it all the same: runs on either side of the middle,
    /// an insert with a temporary URI or an update there, a malformed value in either half
    /// (then SwiftProtobuf reads it, as for any request not in the plain form).
    @Test func largeRequestsReadInHalvesAsSwiftProtobufReadsThem() throws {
        let count = ApplyRequestFields.changesReadOnOneThread * 2 + 11
        let middle = count / 2
        func insert(_ index: Int) -> ObjectEdit {
            .insert(
                entity: index < middle - 3 ? "Trip" : "Stop",
                attributes: ["name": .string("n\(index)"), "score": .int(Int64(index))], relationships: [:], id: nil)
        }
        func bytes(_ edits: [ObjectEdit]) throws -> [UInt8] {
            try ApplyCall(store: "s", author: "a", uniquenessPolicy: .error, edits: edits, returnTransaction: true)
                .serializedBytes()
        }
        let plain = (0..<count).map(insert)
        // Written in two halves too: the bytes parse as the message the call describes.
        let call = ApplyCall(store: "s", author: "a", uniquenessPolicy: .error, edits: plain, returnTransaction: true)
        #expect(try Modeld_V1_ApplyRequest(serializedBytes: try call.serializedBytes()) == call.wire)
        let read = try #require(ApplyRequestFields(serialized: try bytes(plain)))
        let runs = try #require(read.insertRuns)
        #expect(runs.reduce(0) { $0 + $1.count } == count)
        #expect(runs.map { $0.entityName } == ["Trip", "Stop", "Stop"])
        #expect(try read.edits(in: Self.store) == plain)
        #expect(Self.ours(try bytes(plain)) == Self.theirs(try bytes(plain)))

        let temporary = PersistentIdentifier.temporary(storeIdentifier: Self.store, entityName: "Stop")
        var mixed = plain
        mixed[middle] = ObjectEdit.insert(entity: "Stop", attributes: [:], relationships: [:], id: temporary)
        mixed[middle + 1] = ObjectEdit.update(
            PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(1)),
            attributes: ["name": Value.string("x")], relationships: [:])
        let mixedRead = try #require(ApplyRequestFields(serialized: try bytes(mixed)))
        #expect(mixedRead.insertRuns == nil)
        #expect(try mixedRead.edits(in: Self.store) == mixed)

        // A UUID value that is not one, in the first half and in the second.
        for index in [10, count - 10] {
            var request = Modeld_V1_ApplyRequest()
            request.store = "s"
            request.changes = plain.map { $0.wire }
            var change = request.changes[index]
            guard case .insert(var object)? = change.kind else {
                Issue.record("change \(index) is not an insert")
                continue
            }
            object.attributes["name"] = Modeld_V1_Value.with { $0.uuidValue = "not a UUID" }
            change.insert = object
            request.changes[index] = change
            let malformed: [UInt8] = try request.serializedBytes()
            #expect(ApplyRequestFields(serialized: malformed) == nil)
            #expect(Self.theirs(malformed) != .refused)
        }
    }
}
