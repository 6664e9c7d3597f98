import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// The hand-written FetchResponse coding against SwiftProtobuf's generated code: what one
/// writes, the other reads back the same, for every kind of value and relationship.
@Suite struct FetchResponseCodingTests {
    static let store = UUID()

    static func randomObject(_ random: inout SeededRandom, index: Int) -> ObjectSnapshot {
        func id(_ key: Int) -> PersistentIdentifier {
            random.chance(0.2)
                ? .temporary(storeIdentifier: store, entityName: "Trip")
                : PersistentIdentifier(storeIdentifier: store, entityName: "Trip", key: .permanent(Int64(key)))
        }
        var attributes: [String: Value] = [:]
        for name in ["a", "bé", "long name with spaces", "z"] where random.chance(0.7) {
            attributes[name] = random.pick(WireConversionTests.values)
        }
        if random.chance(0.1) {
            // Big enough that lengths take several bytes.
            attributes["big"] = .string(String(repeating: "x", count: random.int(100...70_000)))
        }
        var relationships: [String: RelationshipValue] = [:]
        if random.chance(0.5) { relationships["owner"] = .toOne(random.chance(0.3) ? nil : id(random.int(1...9))) }
        if random.chance(0.5) {
            relationships["stops"] = .toMany((0..<random.int(0...40)).map { _ in id(random.int(1...1_000_000)) })
        }
        let version: Int64 = random.chance(0.1) ? 0 : Int64(random.int(1...Int(Int32.max)))
        return ObjectSnapshot(id: id(index), version: version, attributes: attributes, relationships: relationships)
    }

    /// Objects, prefetched objects, identifiers and a count, written by hand, parse with
    /// SwiftProtobuf into the message the wire conversions build; and SwiftProtobuf's bytes of
    /// that message read back by hand into the same objects.
    @Test(arguments: 1...40)
    func bothWaysAgreeWithSwiftProtobuf(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var chunk = FetchChunk()
        chunk.objects = (0..<random.int(0...30)).map { Self.randomObject(&random, index: $0 + 1) }
        chunk.prefetched = (0..<random.int(0...3)).map { Self.randomObject(&random, index: $0 + 100) }
        chunk.identifiers = (0..<random.int(0...5)).map {
            PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(Int64($0 + 1)))
        }
        chunk.count = random.chance(0.5) ? nil : random.int(0...Int(Int64.max / 2))

        var encoder = FetchResponseEncoder()
        for object in chunk.objects { encoder.append(object) }
        for object in chunk.prefetched { encoder.append(object, prefetched: true) }
        for id in chunk.identifiers { encoder.append(identifier: id.uriRepresentation) }
        if let count = chunk.count { encoder.setCount(count) }
        let handWritten = encoder.finish()
        #expect(encoder.byteCount == 0)

        var message = Modeld_V1_FetchResponse()
        message.objects = chunk.objects.map(\.wire)
        message.prefetched = chunk.prefetched.map(\.wire)
        message.identifiers = chunk.identifiers.map(\.uriRepresentation)
        if let count = chunk.count { message.count = Int64(count) }

        let parsed = try Modeld_V1_FetchResponse(serializedBytes: handWritten)
        #expect(parsed == message)
        #expect(try FetchChunk(wire: parsed) == chunk)

        let generated: [UInt8] = try message.serializedBytes()
        #expect(try FetchChunk(serialized: generated) == chunk)
        #expect(try FetchChunk(serialized: handWritten) == chunk)
    }

    /// Every prefix of a response's bytes, and the bytes with fields the reader does not know,
    /// are read as SwiftProtobuf reads them: refused where it refuses them, the same objects
    /// where it accepts them; nothing crashes.
    @Test func damagedAndExtendedBytesAreReadAsSwiftProtobufReadsThem() throws {
        var random = SeededRandom(seed: 7)
        var message = Modeld_V1_FetchResponse()
        // Small objects: every prefix is read twice, so the cost grows with the square of the size.
        message.objects = (0..<3).map { index in
            var object = Self.randomObject(&random, index: index + 1)
            object.attributes["big"] = nil
            if case .toMany(let ids) = object.relationships["stops"] {
                object.relationships["stops"] = .toMany(Array(ids.prefix(3)))
            }
            return object.wire
        }
        message.count = 3
        let bytes: [UInt8] = try message.serializedBytes()
        var refused = 0
        for length in 0..<bytes.count {
            let prefix = Array(bytes.prefix(length))
            let theirs = try? FetchChunk(wire: Modeld_V1_FetchResponse(serializedBytes: prefix))
            let ours = try? FetchChunk(serialized: prefix)
            #expect(ours == theirs, "prefix of \(length) bytes")
            if ours == nil { refused += 1 }
        }
        #expect(refused > bytes.count / 2)
        #expect(bytes.count < 4_000)

        // Field 99 (a string) and field 98 (a varint) at the top and inside an object.
        var extended = bytes
        extended += [0x9A, 0x06, 0x02, 0x68, 0x69, 0x90, 0x06, 0x2A]
        var object: [UInt8] = try message.objects[0].serializedBytes()
        object += [0x90, 0x06, 0x01]
        extended += [0x0A] + Self.varint(object.count) + object
        var expected = try FetchChunk(wire: message)
        expected.objects.append(expected.objects[0])
        #expect(try FetchChunk(serialized: extended) == expected)
    }

    /// Bad text forms and relationship values are refused with the same errors as the wire
    /// conversions give, naming the attribute.
    @Test func badValuesAreRefusedAsTheWireConversionsRefuseThem() throws {
        var object = Modeld_V1_ObjectSnapshot()
        object.uri =
            PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(1)).uriRepresentation
        object.attributes["id"] = Modeld_V1_Value.with { $0.uuidValue = "not-a-uuid" }
        let response = Modeld_V1_FetchResponse.with { $0.objects = [object] }
        let theirs = try #require(throws: ModelError.self) { try FetchChunk(wire: response) }
        let ours = try #require(throws: ModelError.self) { try FetchChunk(serialized: try response.serializedBytes()) }
        #expect(ours == theirs)
        #expect(ours.code == .typeMismatch && ours.message.contains("'id'"))

        object.attributes = [:]
        object.relationships["owner"] = Modeld_V1_RelationshipValue()
        let noKind = Modeld_V1_FetchResponse.with { $0.objects = [object] }
        let error = try #require(throws: ModelError.self) { try FetchChunk(serialized: try noKind.serializedBytes()) }
        #expect(error.code == .invalidArgument && error.message.contains("to_one"))
    }

    /// Text of every length around the 8-byte steps the ASCII check takes, with and without
    /// characters beyond ASCII anywhere in it, reads back as written; bytes that are not UTF-8
    /// are refused where SwiftProtobuf refuses them.
    @Test func textIsReadAsUTF8() throws {
        let id = PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(1))
        var texts = [""]
        for length in 1...20 {
            let ascii = String((0..<length).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
            texts += [
                ascii, ascii + "é", "é" + ascii, ascii + "\u{1F600}" + ascii,
                String(ascii.prefix(length / 2)) + "\u{0}ü" + ascii,
            ]
        }
        for text in texts {
            var encoder = FetchResponseEncoder()
            encoder.append(ObjectSnapshot(id: id, version: 1, attributes: ["t": .string(text), "k" + text: .int(1)]))
            let bytes = encoder.finish()
            let object = try #require(try FetchChunk(serialized: bytes).objects.first)
            #expect(object.attributes == ["t": .string(text), "k" + text: .int(1)], "\(Array(text.utf8))")
        }
        // 16 bytes of text, then each damaged the same way in the same place.
        var encoder = FetchResponseEncoder()
        encoder.append(ObjectSnapshot(id: id, version: 1, attributes: ["t": .string("PLACEHOLDER-TEXT")]))
        let valid = encoder.finish()
        let start = try #require(
            valid.indices.first { Array(valid[$0..<min($0 + 16, valid.count)]) == Array("PLACEHOLDER-TEXT".utf8) })
        let damages: [[UInt8]] = [
            [0xFF], [0xC3], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0x80], [0xF4, 0x90, 0x80, 0x80],
        ]
        for damage in damages {
            for offset in [0, 7, 8, 16 - damage.count] {
                var bytes = valid
                bytes.replaceSubrange((start + offset)..<(start + offset + damage.count), with: damage)
                #expect(throws: (any Error).self, "SwiftProtobuf refuses \(damage) at \(offset)") {
                    try Modeld_V1_FetchResponse(serializedBytes: bytes)
                }
                let error = try #require(throws: ModelError.self) { try FetchChunk(serialized: bytes) }
                #expect(error.message.contains("UTF-8"), "\(error)")
            }
        }
    }

    /// Each object is read into a copy of the previous object's tables, while it has the same
    /// names. Objects whose maps come in every shape read as SwiftProtobuf reads them: the same
    /// names in other orders, fewer, more, others, a name written twice (the last value wins),
    /// more names than the copy keeps track of, none, an empty one; relationships likewise.
    @Test func objectsSharingTheirNamesReadAsSwiftProtobufReadsThem() throws {
        var random = SeededRandom(seed: 11)
        func shuffled(_ names: [String]) -> [String] {
            var names = names
            for index in names.indices.reversed() { names.swapAt(index, random.int(0...index)) }
            return names
        }
        let five = ["name", "category", "score", "price", "created"]
        let many = (0..<70).map { "a\($0)" }
        let attributeShapes: [[String]] = [
            five, five, five.reversed(), shuffled(five), five.filter { $0 != "price" }, five + ["extra"],
            five + ["score"],
            five.map { $0 == "name" ? "title" : $0 }, five, many, shuffled(many), many.dropLast(), five, [], [], five,
            shuffled(five),
            // An empty name (no schema has one, but the wire may carry it).
            [""] + five, five + [""],
        ]
        let relationshipShapes: [[String]] = [
            ["owner"], ["owner", "stops"], ["stops", "owner"], [], ["owner", "owner"], ["stops"],
        ]
        // An object is the concatenation of one-entry messages (protobuf merges them, maps entry
        // by entry), so the order of its names, and repeated names, are as the test writes them.
        var response: [UInt8] = []
        for (index, names) in attributeShapes.enumerated() {
            let id = PersistentIdentifier(
                storeIdentifier: Self.store, entityName: "Trip", key: .permanent(Int64(index + 1)))
            var object: [UInt8] = try ObjectSnapshot(id: id, version: Int64(index + 1)).wire.serializedBytes()
            for name in names {
                object += try ObjectSnapshot(
                    id: id, version: 1, attributes: [name: random.pick(WireConversionTests.values)]
                ).wire.serializedBytes()
            }
            for name in relationshipShapes[index % relationshipShapes.count] {
                let value: RelationshipValue =
                    name == "owner" ? .toOne(random.chance(0.3) ? nil : id) : .toMany([id, id])
                object += try ObjectSnapshot(id: id, version: 1, relationships: [name: value]).wire.serializedBytes()
            }
            response += [0x0A] + Self.varint(object.count) + object
        }
        let theirs = try FetchChunk(wire: Modeld_V1_FetchResponse(serializedBytes: response))
        #expect(try FetchChunk(serialized: response) == theirs)
        #expect(theirs.objects.map(\.attributes.count) == attributeShapes.map { Set($0).count })
        #expect(theirs.objects.count == attributeShapes.count)
    }

    /// Read for a store, a response naming another store's object (an object, a relationship's
    /// target, a prefetched object, an identifier) fails as the wire conversion fails for that
    /// store; read for no store, it reads as the message does.
    @Test func urisOfAnotherStoreAreRefusedWhenReadForAStore() throws {
        let mine = PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(1))
        let stranger = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Trip", key: .permanent(2))
        let responses: [Modeld_V1_FetchResponse] = [
            .with { $0.objects = [ObjectSnapshot(id: stranger, version: 1).wire] },
            .with {
                $0.objects = [ObjectSnapshot(id: mine, version: 1, relationships: ["owner": .toOne(stranger)]).wire]
            },
            .with {
                $0.objects = [
                    ObjectSnapshot(id: mine, version: 1, relationships: ["stops": .toMany([mine, stranger])]).wire
                ]
            },
            .with { $0.prefetched = [ObjectSnapshot(id: stranger, version: 1).wire] },
            .with { $0.identifiers = [mine.uriRepresentation, stranger.uriRepresentation] },
        ]
        for (index, response) in responses.enumerated() {
            let bytes: [UInt8] = try response.serializedBytes()
            let theirs = try #require(throws: ModelError.self, "response \(index)") {
                try FetchChunk(wire: response, in: Self.store)
            }
            let ours = try #require(throws: ModelError.self, "response \(index)") {
                try FetchChunk(serialized: bytes, in: Self.store)
            }
            #expect(ours == theirs, "response \(index)")
            #expect(ours.code == .invalidIdentifier && ours.message.contains("not to this store"), "\(ours)")
            #expect(try FetchChunk(serialized: bytes) == FetchChunk(wire: response), "response \(index)")
        }
        let own = Modeld_V1_FetchResponse.with {
            $0.objects = [ObjectSnapshot(id: mine, version: 1, relationships: ["owner": .toOne(mine)]).wire]
        }
        #expect(try FetchChunk(serialized: own.serializedBytes(), in: Self.store) == FetchChunk(wire: own))
    }

    /// Attribute entries whose value message holds more than one field (two kinds: the last
    /// wins, as in a `oneof`; an unknown field), whose key or value runs past a one-byte length,
    /// or whose value is empty, are read as SwiftProtobuf reads them, beside entries laid out as
    /// a writer lays out a short one (read in one pass), in the same object.
    @Test func attributeEntriesOfEveryLayoutReadAsSwiftProtobufReadsThem() throws {
        func entry(_ key: [UInt8], value: [UInt8]) -> [UInt8] {
            let body = [0x0A] + Self.varint(key.count) + key + [0x12] + Self.varint(value.count) + value
            return [0x1A] + Self.varint(body.count) + body
        }
        let uri = PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(7))
            .uriRepresentation
        let long = Array(String(repeating: "k", count: 130).utf8)
        let entries: [[UInt8]] = [
            entry(Array("plain".utf8), value: [0x10, 0x54]), // int 42
            entry(Array("twoKinds".utf8), value: [0x10, 0x54, 0x0A, 0x01, 0x78]), // int 42, then "x"
            entry(Array("unknown".utf8), value: [0x20, 0x01, 0x98, 0x06, 0x05]), // true, then field 99
            entry(long, value: [0x0A, 0x02, 0x68, 0x69]), // a key of 130 bytes
            entry(Array("longText".utf8), value: [0x0A] + Self.varint(200) + Array(repeating: 0x61, count: 200)),
            entry(Array("empty".utf8), value: []),
            entry(Array("double".utf8), value: [0x19, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F]), // 1.5
        ]
        var object = [0x0A] + Self.varint(uri.utf8.count) + Array(uri.utf8) + [0x10, 0x03]
        for entry in entries { object += entry }
        let bytes = [0x0A] + Self.varint(object.count) + object
        let theirs = try FetchChunk(wire: Modeld_V1_FetchResponse(serializedBytes: bytes))
        let ours = try FetchChunk(serialized: bytes)
        #expect(ours == theirs)
        let attributes = try #require(ours.objects.first).attributes
        #expect(attributes.count == entries.count)
        #expect(attributes["plain"] == .int(42) && attributes["twoKinds"] == .string("x"))
        #expect(attributes["unknown"] == .bool(true) && attributes["double"] == .double(1.5))
        #expect(attributes[String(decoding: long, as: UTF8.self)] == .string("hi"))
        #expect(attributes["longText"] == .string(String(repeating: "a", count: 200)))
        #expect(attributes["empty"] == .null)
    }

    static func varint(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = [], rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        return bytes + [UInt8(rest)]
    }
}
