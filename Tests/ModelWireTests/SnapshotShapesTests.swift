import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import Testing

/// Answers read one after another with the same ``SnapshotShapes`` (as a client's connection
/// reads them): each reads as it does alone, whatever the shapes of the answers before it.
@Suite struct SnapshotShapesTests {
    static let store = FetchResponseCodingTests.store

    /// An answer's bytes, and what it holds as SwiftProtobuf's message reads it.
    static func answer(_ objects: [ObjectSnapshot]) throws -> (bytes: [UInt8], chunk: FetchChunk) {
        let message = Modeld_V1_FetchResponse.with { $0.objects = objects.map(\.wire) }
        return (try message.serializedBytes(), try FetchChunk(wire: message))
    }

    @Test(arguments: 1...20)
    func answersOfChangingShapesReadAsEachAlone(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let shapes = SnapshotShapes()
        for round in 0..<12 {
            // Point reads of one object, queries of several, and now and then another entity
            // with names of its own.
            var objects = (0..<(random.chance(0.5) ? 1 : random.int(0...8))).map {
                FetchResponseCodingTests.randomObject(&random, index: round * 10 + $0 + 1)
            }
            if random.chance(0.3) {
                let id = PersistentIdentifier(storeIdentifier: Self.store, entityName: "Stop", key: .permanent(7))
                objects.append(ObjectSnapshot(id: id, version: 1, attributes: ["city": .string("Lyon"), "a": .int(1)]))
            }
            let (bytes, chunk) = try Self.answer(objects)
            #expect(try FetchChunk(serialized: bytes, in: Self.store, shapes: shapes) == chunk, "round \(round)")
            #expect(try FetchChunk(serialized: bytes, shapes: shapes) == chunk, "round \(round), for no store")
        }
    }

    /// Shapes kept from one store's answers do not let another store's URIs through, nor keep a
    /// reader for that store from reading its own.
    @Test func shapesKeptForOneStoreCheckTheNextStoresURIs() throws {
        let shapes = SnapshotShapes()
        let mine = PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(1))
        let other = UUID()
        let theirs = PersistentIdentifier(storeIdentifier: other, entityName: "Trip", key: .permanent(1))
        let attributes: [String: Value] = ["name": .string("Rome")]
        let (myBytes, myChunk) = try Self.answer([ObjectSnapshot(id: mine, version: 1, attributes: attributes)])
        let (theirBytes, theirChunk) = try Self.answer([ObjectSnapshot(id: theirs, version: 1, attributes: attributes)])
        #expect(try FetchChunk(serialized: myBytes, in: Self.store, shapes: shapes) == myChunk)
        let refused = try #require(throws: ModelError.self) {
            try FetchChunk(serialized: theirBytes, in: Self.store, shapes: shapes)
        }
        #expect(refused.code == .invalidIdentifier && refused.message.contains("not to this store"), "\(refused)")
        #expect(try FetchChunk(serialized: theirBytes, in: other, shapes: shapes) == theirChunk)
        #expect(throws: ModelError.self) { try FetchChunk(serialized: myBytes, in: other, shapes: shapes) }
        #expect(try FetchChunk(serialized: myBytes, in: Self.store, shapes: shapes) == myChunk)
    }
}
