import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// Random and mutated input, seeded (so a failure repeats): the predicate text parser, the URI
/// parser, and the decoding of every request into ModelCore types. Nothing crashes or hangs;
/// every failure is a `ModelError` (or a protobuf decoding error, which the daemon sends back as
/// INVALID_ARGUMENT) with a message. 100,000 cases here, 3,000 more over a real socket
/// (`WireFuzzTests`); the libFuzzer target in Fuzz/ runs longer.
@Suite struct HostileInputTests {
    static let predicateSeeds = [
        #"name == "Kyoto" AND startDate > "2026-01-01""#, #"destination CONTAINS[cd] "é" OR NOT (name BEGINSWITH "A")"#,
        #"ANY bucketList.title LIKE[c] "*tower*""#, #"SUBQUERY(bucketList, $b, $b.isInPlan == true).@count > 2"#,
        #"bucketList.@count BETWEEN {1, 3} AND name IN {"a", "b", nil}"#, #"startDate + 86400 < endDate"#,
        #"livingAccommodation == nil OR @entity == "BusinessTrip""#, #"(endDate - startDate) / 86400 >= 7"#,
        #"TRUEPREDICATE"#, #"self == CAST("modeld://11111111-2222-3333-4444-555555555555/Trip/p1", "object")"#,
    ]
    static let alphabet = Array(
        #"  aZ09_$@.,(){}[]"'\=<>!&|+-*/%:;#~`^?CONTAINSANDORNOTANYALLNONESUBQUERYnil@count@sum é😀"#)

    /// A mutation of `text`: characters inserted, deleted, replaced, or a slice repeated.
    static func mutate(_ text: String, _ random: inout SeededRandom) -> String {
        var characters = Array(text)
        for _ in 0..<random.int(1...4) {
            let position = characters.isEmpty ? 0 : random.int(0...(characters.count - 1))
            switch random.int(0...4) {
            case 0: characters.insert(random.pick(alphabet), at: position)
            case 1: if !characters.isEmpty { characters.remove(at: position) }
            case 2: if !characters.isEmpty { characters[position] = random.pick(alphabet) }
            case 3:
                let end = min(characters.count, position + random.int(1...12))
                characters.insert(contentsOf: characters[position..<end], at: position)
            default: characters = Array(characters.prefix(position))
            }
        }
        return String(characters)
    }

    @Test func predicateTextNeverCrashes() throws {
        var random = SeededRandom(seed: 0xF022)
        let schema = try ResolvedSchema(SampleTrips.schema)
        let trip = try schema.entity("Trip")
        var parsed = 0, typed = 0
        for index in 0..<40_000 {
            let text =
                index % 4 == 0
                ? String((0..<random.int(0...80)).map { _ in random.pick(Self.alphabet) })
                : Self.mutate(random.pick(Self.predicateSeeds), &random)
            do {
                let predicate = try PredicateParser.parse(text)
                parsed += 1
                // What parses prints as text that parses back to the same tree.
                #expect(try PredicateParser.parse(predicate.description) == predicate, "\(text.debugDescription)")
                do {
                    _ = try predicate.typed(for: trip, in: schema)
                    typed += 1
                } catch {
                    #expect(!error.message.isEmpty)
                }
            } catch {
                #expect(
                    [.invalidPredicate, .resourceExhausted].contains(error.code), "\(text.debugDescription): \(error)")
                #expect(!error.message.isEmpty)
            }
        }
        #expect(parsed > 3_000 && typed > 600, "the mutations mostly miss: \(parsed) parsed, \(typed) typed")
    }

    @Test func uriParsingNeverCrashes() {
        var random = SeededRandom(seed: 0x0121)
        let seeds = [
            "modeld://11111111-2222-3333-4444-555555555555/Trip/p42",
            "modeld://11111111-2222-3333-4444-555555555555/Trip/t0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9",
        ]
        var parsed = 0
        for index in 0..<30_000 {
            let text =
                index % 5 == 0
                ? String(
                    (0..<random.int(0...90)).map { _ in random.pick(Array("modeld:/-0123456789abcdefpt_TripXé%?#")) })
                : Self.mutate(random.pick(seeds), &random)
            do {
                let id = try PersistentIdentifier(uri: text)
                parsed += 1
                #expect(try PersistentIdentifier(uri: id.uriRepresentation) == id)
            } catch {
                #expect(
                    error.code == .invalidIdentifier && !error.message.isEmpty, "\(text.debugDescription): \(error)")
            }
        }
        #expect(parsed > 300, "\(parsed)")
    }

    /// Every request type, serialized, mutated byte by byte, decoded and converted as the daemon
    /// does.
    @Test func mutatedRequestsDecodeOrFailCleanly() throws {
        var random = SeededRandom(seed: 0xDEC0DE)
        let samples = try WireSamples.requests()
        var decoded = 0, converted = 0
        for _ in 0..<30_000 {
            let sample = random.pick(samples)
            var bytes = sample.bytes
            for _ in 0..<random.int(1...6) {
                guard !bytes.isEmpty else { break }
                let position = random.int(0...(bytes.count - 1))
                switch random.int(0...4) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes[position] ^= 1 << UInt8(random.int(0...7))
                case 2: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                case 3: bytes.remove(at: position)
                default: bytes = Array(bytes.prefix(position))
                }
            }
            do {
                if try sample.convert(bytes) { converted += 1 }
                decoded += 1
            } catch is ModelError {
                decoded += 1
            } catch {
                // A protobuf decoding error: the daemon answers INVALID_ARGUMENT.
            }
        }
        #expect(decoded > 2_500 && converted > 2_000, "\(decoded) decoded, \(converted) converted")
    }
}

/// One valid request of each kind, and how the daemon turns its bytes into ModelCore values.
struct WireSamples {
    let bytes: [UInt8]
    /// Decodes and converts; true if the request was valid all the way, false if the conversion
    /// refused it (throws ModelError), throws a decoding error for bad protobuf.
    let convert: ([UInt8]) throws -> Bool

    static func sample<M: SwiftProtobuf.Message>(_ message: M, _ convert: @escaping (M) throws -> Void) throws
        -> WireSamples
    {
        WireSamples(bytes: try message.serializedBytes()) { bytes in
            let decoded = try M(serializedBytes: bytes)
            try convert(decoded)
            return true
        }
    }

    static func requests() throws -> [WireSamples] {
        let store = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
        let trip = PersistentIdentifier(storeIdentifier: store, entityName: "Trip", key: .permanent(1))
        let fetch = FetchDescriptor(
            entityName: "Trip", predicate: try PredicateParser.parse(HostileInputTests.predicateSeeds[3]),
            sortBy: [SortDescriptor("name")], offset: 1, limit: 5, propertiesToFetch: ["name"],
            relationshipKeyPathsForPrefetching: ["bucketList"])
        let edits: [ObjectEdit] = [
            .insert(
                entity: "Trip",
                attributes: ["name": .string("x"), "startDate": .date(Timestamp(microsecondsSince1970: 5))],
                relationships: ["bucketList": .toMany([])], id: nil),
            .update(trip, attributes: ["name": .decimal(1)], relationships: ["livingAccommodation": .toOne(nil)]),
            .delete(trip), .add([trip], relationship: "r", of: trip),
        ]
        return [
            try sample(
                Modeld_V1_StoreFetchRequest.with {
                    $0.store = "s"; $0.fetch = fetch.wire
                }
            ) { request in
                _ = try FetchDescriptor(wire: request.fetch)
            },
            try sample(
                Modeld_V1_StoreFetchRequest.with {
                    $0.store = "s"; $0.fetch = fetch.wire; $0.fetch.predicate.text = HostileInputTests.predicateSeeds[1]
                }
            ) { request in
                _ = try FetchDescriptor(wire: request.fetch)
            },
            try sample(
                Modeld_V1_StoreAggregateRequest.with {
                    $0.aggregate =
                        AggregateDescriptor(
                            entityName: "Trip", groupBy: ["name"],
                            aggregations: [Aggregation("n", .count), Aggregation("s", .sum, "x")]
                        ).wire
                }
            ) { request in _ = try AggregateDescriptor(wire: request.aggregate) },
            try sample(
                Modeld_V1_ApplyRequest.with {
                    $0.store = "s"; $0.changes = edits.map(\.wire)
                }
            ) { request in
                _ = try ObjectEdit.edits(wire: request.changes, in: store)
            },
            try sample(
                Modeld_V1_StageRequest.with {
                    $0.sessionID = "x"; $0.changes = edits.map(\.wire)
                }
            ) { request in
                _ = try ObjectEdit.edits(wire: request.changes, in: nil)
            },
            try sample(
                Modeld_V1_ApplySchemaRequest.with {
                    $0.store = "s"; $0.schema = SampleTrips.schema.wire
                }
            ) { request in
                try Schema(wire: request.schema).validate()
            },
            try sample(Modeld_V1_GetObjectsRequest.with { $0.uris = [trip.uriRepresentation] }) { request in
                for uri in request.uris { _ = try PersistentIdentifier(wire: uri, in: store) }
            },
            try sample(
                Modeld_V1_BatchUpdateRequest.with {
                    $0.predicate = Modeld_V1_Predicate(try! PredicateParser.parse("name == \"a\""));
                    $0.attributes = ["name": Value.string("b").wire]
                }
            ) { request in
                _ = try request.predicate.model()
                _ = try [String: Value](wire: request.attributes)
            },
            try sample(
                Modeld_V1_HistoryRequest.with {
                    $0.store = "s"; $0.after = 3; $0.author = "a"
                }
            ) { _ in },
            try sample(
                Modeld_V1_OpenSessionRequest.with {
                    $0.store = "s"; $0.mergePolicy = .objectTrump
                }
            ) { request in
                _ = try MergePolicy(wire: request.mergePolicy)
                _ = try UniquenessPolicy(wire: request.uniquenessPolicy)
            },
        ]
    }
}
