import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// A fetch request written by hand is the bytes SwiftProtobuf writes for the same message.
@Suite struct FetchCallTests {
    /// Random descriptors (every node kind, every literal type, empty names and lists, negative
    /// batch sizes): the bytes are SwiftProtobuf's, and the daemon's reading gives the descriptor
    /// back.
    @Test func randomRequestsAreWrittenAsSwiftProtobufWritesThem() throws {
        var generator = PredicateGenerator(seed: 0xCA11)
        var plain = 0
        for round in 0..<3_000 {
            var (descriptor, _) = try FetchRequestFieldsTests.randomRequest(&generator)
            if round % 10 == 0 { descriptor.entityName = "" }
            if round % 13 == 0 { descriptor.propertiesToFetch = [] }
            if round % 17 == 0 { descriptor.sortBy.append(SortDescriptor(PropertyPath(["a", "b"]), ascending: false)) }
            let batchSize: Int32 = round % 7 == 0 ? -Int32(round) : Int32(round % 3 * 100)
            let store = ["items", "", "trips"][round % 3]
            let call = FetchCall(store: store, descriptor: descriptor, batchSize: batchSize)
            let bytes = try call.serializedBytes()
            let expected: [UInt8] = try call.wire.serializedBytes()
            #expect(bytes == expected, "\(descriptor)")
            if descriptor.predicate.map(FetchRequestFieldsTests.isPlain) ?? true {
                plain += 1
                let read = try #require(FetchRequestFields(serialized: bytes))
                #expect(read.descriptor == descriptor && read.store == store && read.batchSize == batchSize)
            }
        }
        #expect(plain > 500, "\(plain)")
    }

    /// Literals of every type, nil among them, inside lists and alone.
    @Test func everyLiteralIsWrittenAsSwiftProtobufWritesIt() throws {
        let values: [Value] = [
            .null, .string(""), .string("é"), .int(0), .int(-1), .int(.max), .double(0), .double(-2.5), .bool(false),
            .bool(true), .date(Timestamp(microsecondsSince1970: -5)), .data(Data()), .data(Data([0, 255])),
            .uuid(UUID()), .url(URL(string: "https://example.com/a?b")!), .decimal(Decimal(string: "12.50")!),
            .json("{\"a\":1}"),
        ]
        for value in values {
            let predicate = Predicate.or([
                .comparison(Comparison(.keyPath(PropertyPath(["x"])), .equal, .literal(value))),
                .comparison(Comparison(.keyPath(PropertyPath(["x"])), .in, .list([.literal(value), .literal(.null)]))),
                .not(.constant(false)),
            ])
            let call = FetchCall(store: "s", descriptor: FetchDescriptor(entityName: "E", predicate: predicate))
            #expect(try call.serializedBytes() == (try call.wire.serializedBytes()), "\(value)")
        }
    }
}
