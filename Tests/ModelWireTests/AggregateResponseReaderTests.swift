import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// The hand-written AggregateResponse reader against SwiftProtobuf's generated code and the wire
/// conversions: the same rows from the same bytes, and the same error for a malformed value.
@Suite struct AggregateResponseReaderTests {
    /// Rows of every kind of value, most with the same names (as a grouped aggregate's are),
    /// some with others or fewer, some entries without a value, and unknown fields beside.
    @Test(arguments: 1...40)
    func rowsAgreeWithSwiftProtobuf(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var response = Modeld_V1_AggregateResponse()
        let usual = ["category", "n", "a.b", "naïve"]
        for _ in 0..<random.int(0...30) {
            var row = Modeld_V1_AggregateRow()
            let names = random.chance(0.8) ? usual : usual.filter { _ in random.chance(0.5) } + ["other"]
            for name in names {
                row.values[name] =
                    random.chance(0.1) ? Modeld_V1_Value() : random.pick(WireConversionTests.values).wire
            }
            if random.chance(0.2) {
                // A big value, whose lengths take more than one byte.
                row.values["big"] = Value.string(String(repeating: "x", count: random.int(100...5_000))).wire
            }
            response.rows.append(row)
        }
        var bytes: [UInt8] = try response.serializedBytes()
        let expected = try response.rows.map { row throws(ModelError) in try [String: Value](wire: row.values) }
        #expect(try AggregateResponseReader.rows(serialized: bytes) == expected)

        // An unknown varint field after the rows, and an unknown row field in a row of its own.
        bytes += [0x38, 0x05, 0x0A, 0x02, 0x10, 0x01]
        let withUnknown = try Modeld_V1_AggregateResponse(serializedBytes: bytes)
        let expectedWithUnknown = try withUnknown.rows.map { row throws(ModelError) in
            try [String: Value](wire: row.values)
        }
        #expect(expectedWithUnknown.count == expected.count + 1)
        #expect(try AggregateResponseReader.rows(serialized: bytes) == expectedWithUnknown)
    }

    /// A malformed value throws the error the wire conversions throw, naming its key; bytes that
    /// end inside a row are refused.
    @Test func malformedAnswersAreRefused() throws {
        var row = Modeld_V1_AggregateRow()
        row.values["category"] = Value.string("c1").wire
        row.values["when"] = Modeld_V1_Value.with { $0.uuidValue = "not a UUID" }
        let response = Modeld_V1_AggregateResponse.with { $0.rows = [row] }
        let bytes: [UInt8] = try response.serializedBytes()
        var expected: (any Error)?
        do {
            _ = try [String: Value](wire: row.values)
        } catch {
            expected = error
        }
        let thrown = #expect(throws: ModelError.self) { try AggregateResponseReader.rows(serialized: bytes) }
        #expect(thrown.map { "\($0)" } == expected.map { "\($0)" })
        #expect(thrown.map { "\($0)" }?.contains("when") == true)

        let cut = Array(bytes.dropLast(3))
        #expect(throws: ModelError.self) { try AggregateResponseReader.rows(serialized: cut) }
    }
}
