import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// A fetch request read by hand gives the descriptor SwiftProtobuf and
/// ``FetchDescriptor/init(wire:)`` give, or nothing, for them to read, when it is not in the
/// plain form or would be refused.
@Suite struct FetchRequestFieldsTests {
    /// What the daemon's other reading makes of `bytes`: nil where it throws.
    static func slowReading(_ bytes: [UInt8]) -> (store: String, descriptor: FetchDescriptor, batchSize: Int32)? {
        guard let request = try? Modeld_V1_StoreFetchRequest(serializedBytes: bytes),
            let descriptor = try? FetchDescriptor(wire: request.fetch)
        else { return nil }
        return (request.store, descriptor, request.fetch.batchSize)
    }

    /// Whether a predicate holds only the expressions the hand reading reads: key paths,
    /// literals, objects and lists of them.
    static func isPlain(_ predicate: ModelCore.Predicate?) -> Bool {
        func plain(_ expression: ModelCore.Expression) -> Bool {
            switch expression {
            case .keyPath, .literal, .object: true
            case .list(let items): items.allSatisfy(plain)
            default: false
            }
        }
        switch predicate {
        case nil, .constant: return true
        case .comparison(let comparison): return plain(comparison.lhs) && plain(comparison.rhs)
        case .and(let parts), .or(let parts): return parts.allSatisfy(isPlain)
        case .not(let inner): return isPlain(inner)
        }
    }

    static func randomRequest(_ generator: inout PredicateGenerator) throws -> (FetchDescriptor, [UInt8]) {
        var descriptor = FetchDescriptor(entityName: generator.random.pick(["Item", "Trip", "A"]))
        if generator.random.chance(0.9) {
            descriptor.predicate = generator.predicate(depth: generator.random.int(0...4))
        }
        for _ in 0..<generator.random.int(0...2) {
            descriptor.sortBy.append(
                SortDescriptor(
                    PropertyPath([generator.random.pick(["score", "name", "trip"])]),
                    ascending: generator.random.chance(0.5), caseInsensitive: generator.random.chance(0.3)))
        }
        descriptor.offset = generator.random.chance(0.3) ? generator.random.int(0...1_000) : 0
        descriptor.limit = generator.random.chance(0.7) ? generator.random.int(0...100_000) : nil
        descriptor.includesSubentities = generator.random.chance(0.8)
        if generator.random.chance(0.3) {
            descriptor.propertiesToFetch = ["name", "score"].filter { _ in generator.random.chance(0.6) }
        }
        if generator.random.chance(0.2) { descriptor.relationshipKeyPathsForPrefetching = [PropertyPath(["trip"])] }
        descriptor.resultType = generator.random.pick([.objects, .objects, .identifiers, .count])
        let batchSize = Int32(generator.random.chance(0.3) ? generator.random.int(0...5_000) : 0)
        let store = generator.random.pick(["items", "trips", ""])
        let bytes: [UInt8] = try Modeld_V1_StoreFetchRequest.with {
            $0.store = store
            $0.fetch = descriptor.wire
            $0.fetch.batchSize = batchSize
        }.serializedBytes()
        return (descriptor, bytes)
    }

    /// Random requests, as ModelRemote writes them: every plain one is read by hand, to the
    /// descriptor the other reading gives; the others are left to it.
    @Test func randomRequestsReadAsSwiftProtobufReadsThem() throws {
        var generator = PredicateGenerator(seed: 0xFE7C)
        var plain = 0, other = 0
        for _ in 0..<3_000 {
            let (descriptor, bytes) = try Self.randomRequest(&generator)
            let slow = Self.slowReading(bytes)
            guard let fields = FetchRequestFields(serialized: bytes) else {
                #expect(!Self.isPlain(descriptor.predicate), "a plain request was not read by hand: \(descriptor)")
                other += 1
                continue
            }
            plain += 1
            let expected = try #require(slow, "read by hand, refused otherwise: \(descriptor)")
            #expect(fields.descriptor == expected.descriptor)
            #expect(fields.descriptor == descriptor)
            #expect(fields.store == expected.store && fields.batchSize == expected.batchSize)
        }
        #expect(plain > 500 && other > 500, "plain \(plain), other \(other)")
    }

    /// Bytes changed at random, and two requests written one after the other (which protobuf
    /// reads as one, merged): whatever the hand reading accepts, the other reading accepts and
    /// reads the same.
    @Test func changedAndMergedBytesNeverReadOtherwise() throws {
        var generator = PredicateGenerator(seed: 0xBAD5EED)
        var accepted = 0
        for round in 0..<8_000 {
            var (_, bytes) = try Self.randomRequest(&generator)
            if round % 4 == 0 {
                bytes += try Self.randomRequest(&generator).1
            } else if !bytes.isEmpty {
                for _ in 0..<(generator.random.chance(0.7) ? 1 : 3) {
                    let index = generator.random.int(0...(bytes.count - 1))
                    bytes[index] = UInt8(truncatingIfNeeded: generator.random.next())
                }
            }
            guard let fields = FetchRequestFields(serialized: bytes) else { continue }
            accepted += 1
            let expected = try #require(Self.slowReading(bytes), "read by hand, refused otherwise: \(bytes)")
            #expect(fields.descriptor == expected.descriptor, "\(bytes)")
            #expect(fields.store == expected.store && fields.batchSize == expected.batchSize)
        }
        #expect(accepted > 300, "\(accepted)")
    }

    /// A predicate sent as text is parsed as the other reading parses it; forms the hand
    /// reading leaves alone give nil.
    @Test func textAndOtherFormsAreLeftAsTheyWere() throws {
        let text: [UInt8] = try Modeld_V1_StoreFetchRequest.with {
            $0.store = "items"
            $0.fetch.entity = "Item"
            $0.fetch.predicate = Modeld_V1_Predicate(text: "score >= 10 AND name BEGINSWITH[c] \"a\"")
        }.serializedBytes()
        let fields = try #require(FetchRequestFields(serialized: text))
        #expect(fields.descriptor.predicate == (try PredicateParser.parse("score >= 10 AND name BEGINSWITH[c] \"a\"")))

        // A predicate text that does not parse, an unknown result type, an entity named twice,
        // an unknown field: SwiftProtobuf's reading (and its errors, or last-wins) decides.
        var refused = Modeld_V1_StoreFetchRequest.with {
            $0.fetch.entity = "Item"
            $0.fetch.predicate = Modeld_V1_Predicate(text: "score >=")
        }
        #expect(FetchRequestFields(serialized: try refused.serializedBytes()) == nil)
        refused = Modeld_V1_StoreFetchRequest.with { $0.fetch.resultType = .UNRECOGNIZED(7) }
        #expect(FetchRequestFields(serialized: try refused.serializedBytes()) == nil)
        let twice: [UInt8] =
            try Modeld_V1_StoreFetchRequest.with { $0.fetch.entity = "A" }.serializedBytes()
            + Modeld_V1_StoreFetchRequest.with { $0.fetch.entity = "B" }.serializedBytes()
        #expect(FetchRequestFields(serialized: twice) == nil)
        #expect(Self.slowReading(twice)?.descriptor.entityName == "B")
        #expect(FetchRequestFields(serialized: [0x18, 0x01]) == nil)

        // No fetch at all reads as the empty one.
        let empty = try #require(FetchRequestFields(serialized: []))
        #expect(empty.descriptor == Self.slowReading([])?.descriptor)
    }
}
