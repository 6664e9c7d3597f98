import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// Objects written from rows (``ObjectRow``, as the daemon writes a small fetch) against their
/// snapshots: SwiftProtobuf parses the bytes into the message the snapshot makes, and the
/// client reads them back into the same snapshot.
@Suite struct ObjectRowCodingTests {
    static let store = UUID()

    static func id(_ random: inout SeededRandom, entity: String) -> PersistentIdentifier {
        PersistentIdentifier(
            storeIdentifier: store, entityName: entity, key: .permanent(Int64(random.int(1...9_999_999))))
    }

    /// Rows of two shapes, interleaved, so that the encoder's names change from row to row.
    @Test(arguments: 1...40)
    func rowsWriteWhatTheirSnapshotsWrite(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let shapes = [
            ObjectShape(
                entityName: "Trip", attributeNames: ["a", "bé", "long name with spaces", "z"], toOneNames: ["owner"]),
            ObjectShape(entityName: "Stop", attributeNames: ["name"], toOneNames: []),
        ]
        var rows: [ObjectRow] = []
        for _ in 0..<random.int(0...30) {
            let shape = random.chance(0.7) ? shapes[0] : shapes[1]
            var attributes = shape.attributeNames.map { _ in random.pick(WireConversionTests.values) }
            if random.chance(0.1) {
                // Big enough that the object's length takes three bytes.
                attributes[0] = .string(String(repeating: "x", count: random.int(100...70_000)))
            }
            let toOne = shape.toOneNames.map { _ in random.chance(0.3) ? nil : Self.id(&random, entity: "Person") }
            let version: Int64 = random.chance(0.1) ? 0 : Int64(random.int(1...Int(Int32.max)))
            rows.append(
                ObjectRow(
                    id: Self.id(&random, entity: shape.entityName), version: version, shape: shape,
                    attributes: attributes, toOne: toOne))
        }
        var encoder = FetchResponseEncoder()
        for row in rows { encoder.append(row) }
        let bytes = encoder.finish()

        var message = Modeld_V1_FetchResponse()
        message.objects = rows.map(\.snapshot.wire)
        #expect(try Modeld_V1_FetchResponse(serializedBytes: bytes) == message)
        #expect(try FetchChunk(serialized: bytes).objects == rows.map(\.snapshot))
    }

    /// Objects handed over as cells (``RowCell``: numbers as they are, ASCII text as bytes, the
    /// rest as values) write the bytes their rows write.
    @Test(arguments: 1...40)
    func cellsWriteWhatTheirRowsWrite(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let shape = ObjectShape(
            entityName: "Trip", attributeNames: ["a", "bé", "long name with spaces", "z"], toOneNames: ["owner"])
        var rows: [ObjectRow] = []
        for _ in 0..<random.int(1...20) {
            var attributes = shape.attributeNames.map { _ in random.pick(WireConversionTests.values) }
            if random.chance(0.1) {
                // Past the room on the stack a map is written into.
                attributes[1] = .string(String(repeating: "y", count: random.int(1_000...3_000)))
            }
            rows.append(
                ObjectRow(
                    id: Self.id(&random, entity: "Trip"), version: Int64(random.int(0...9)), shape: shape,
                    attributes: attributes, toOne: [random.chance(0.5) ? nil : Self.id(&random, entity: "Person")]))
        }
        var byRow = FetchResponseEncoder(), byCell = FetchResponseEncoder()
        for row in rows {
            byRow.append(row)
            // Each ASCII string's bytes, as a reader's column lies in memory until the cells are written.
            let texts = row.attributes.map { value -> UnsafeMutableBufferPointer<UInt8>? in
                guard case .string(let text) = value, text.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
                let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: text.utf8.count)
                _ = bytes.initialize(from: text.utf8)
                return bytes
            }
            defer { for text in texts { text?.deallocate() } }
            let took = byCell.add(id: row.id, version: row.version, shape: shape, toOne: row.toOne) { index in
                switch row.attributes[index] {
                case .null: return .null
                case .int(let number): return .int(number)
                case .double(let number): return .double(number)
                case .bool(let flag): return .bool(flag)
                case .date(let timestamp): return .date(microseconds: timestamp.microsecondsSince1970)
                case let value:
                    guard let text = texts[index] else { return .value(value) }
                    return .text(UnsafeBufferPointer(text))
                }
            }
            #expect(took)
        }
        #expect(byCell.finish() == byRow.finish())
    }

    /// An answer that starts with room for the objects it expects (learned from the shape's
    /// earlier answers, ``FetchResponseEncoder/expectedObjects``) writes the bytes an answer
    /// grown from nothing writes, answer after answer from the same encoder.
    @Test(arguments: 1...20)
    func answersWithRoomWriteWhatAnswersWithoutWrite(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        // A shape of its own per seed: the size it learns is not another test's.
        let shape = ObjectShape(entityName: "Room\(seed)", attributeNames: ["a", "b", "c"], toOneNames: [])
        var sized = FetchResponseEncoder()
        for _ in 0..<3 {
            let rows = (0..<random.int(1...60)).map { _ in
                var attributes = shape.attributeNames.map { _ in random.pick(WireConversionTests.values) }
                if random.chance(0.05) {
                    attributes[2] = .string(String(repeating: "r", count: random.int(5_000...20_000)))
                }
                return ObjectRow(
                    id: Self.id(&random, entity: shape.entityName), version: 1, shape: shape, attributes: attributes,
                    toOne: [])
            }
            sized.expectedObjects = random.int(1...200)
            var grown = FetchResponseEncoder()
            for row in rows {
                sized.append(row)
                grown.append(row)
            }
            let bytes = sized.finish()
            #expect(bytes == grown.finish())
            #expect(try FetchChunk(serialized: bytes).objects == rows.map(\.snapshot))
        }
    }

    /// A row and a snapshot as a sink takes them: both land in `objects`, in order.
    @Test func theEncoderAsASinkTakesRowsAndSnapshotsInOrder() throws {
        let shape = ObjectShape(entityName: "Stop", attributeNames: ["name"], toOneNames: [])
        let row = ObjectRow(
            id: PersistentIdentifier(storeIdentifier: Self.store, entityName: "Stop", key: .permanent(1)), version: 2,
            shape: shape, attributes: [.string("quay")], toOne: [])
        let snapshot = ObjectSnapshot(
            id: PersistentIdentifier(storeIdentifier: Self.store, entityName: "Stop", key: .permanent(2)), version: 1,
            attributes: ["name": .null])
        var encoder = FetchResponseEncoder()
        let tookRow = encoder.add(row), tookSnapshot = encoder.add(snapshot)
        #expect(tookRow && tookSnapshot)
        #expect(try FetchChunk(serialized: encoder.finish()).objects == [row.snapshot, snapshot])
    }
}
