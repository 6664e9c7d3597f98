import Foundation
import ModelCore
import ModelWire
import SwiftProtobuf
import Testing

/// A point read's request read by hand gives what SwiftProtobuf reads, or nothing, for
/// SwiftProtobuf to read, when it is not in the plain form.
@Suite struct GetObjectsRequestFieldsTests {
    static let store = UUID()

    static func uri(_ entity: String, _ key: Int64, store: UUID = store) -> String {
        PersistentIdentifier(storeIdentifier: store, entityName: entity, key: .permanent(key)).uriRepresentation
    }

    /// Requests as SwiftProtobuf writes them read as it reads them, their URIs in order, the
    /// prefix kept from one request to the next changing with the entity and the store.
    @Test func plainRequestsReadAsSwiftProtobufReadsThem() throws {
        let other = UUID()
        let asked: [[String]] = [
            [], [Self.uri("Trip", 1)], [Self.uri("Trip", 7), Self.uri("Trip", 1_234_567), Self.uri("Stop", 2)],
            [Self.uri("Trip", 3)],
        ]
        var prefix: PersistentIdentifier.URIPrefix?
        for uris in asked {
            let bytes: [UInt8] = try Modeld_V1_GetObjectsRequest.with {
                $0.store = "trips"
                $0.uris = uris
            }.serializedBytes()
            let fields = try #require(GetObjectsRequestFields(serialized: bytes))
            let parsed = try Modeld_V1_GetObjectsRequest(serializedBytes: bytes)
            #expect(fields.store == parsed.store)
            let ids = try fields.identifiers(in: Self.store, prefix: &prefix)
            #expect(ids.map(\.uriRepresentation) == parsed.uris)
        }
        // A URI of another store, after the prefix was kept: the error of `init(wire:in:)`.
        let foreign: [UInt8] = try Modeld_V1_GetObjectsRequest.with {
            $0.store = "trips"
            $0.uris = [Self.uri("Trip", 3, store: other)]
        }.serializedBytes()
        let fields = try #require(GetObjectsRequestFields(serialized: foreign))
        let error = #expect(throws: ModelError.self) { _ = try fields.identifiers(in: Self.store, prefix: &prefix) }
        let expected = #expect(throws: ModelError.self) {
            _ = try PersistentIdentifier(wire: Self.uri("Trip", 3, store: other), in: Self.store)
        }
        #expect(error?.message == expected?.message)
        #expect(error?.code == .invalidIdentifier)
        // Text that is no URI: the same error as `init(wire:in:)` too.
        let garbled = try #require(
            GetObjectsRequestFields(
                serialized: try Modeld_V1_GetObjectsRequest.with { $0.uris = ["not a uri"] }.serializedBytes()))
        #expect(garbled.store == "")
        let garbledError = #expect(throws: ModelError.self) {
            _ = try garbled.identifiers(in: Self.store, prefix: &prefix)
        }
        let garbledExpected = #expect(throws: ModelError.self) {
            _ = try PersistentIdentifier(wire: "not a uri", in: Self.store)
        }
        #expect(garbledError?.message == garbledExpected?.message)
    }

    /// Anything but the plain form is left to SwiftProtobuf: an unknown field, the store given
    /// twice, text that is not ASCII, a truncated field.
    @Test func otherFormsAreLeftToSwiftProtobuf() throws {
        // Field 3, a varint: no field of the message.
        let unknown: [UInt8] =
            try Modeld_V1_GetObjectsRequest.with {
                $0.store = "trips"
                $0.uris = [Self.uri("Trip", 1)]
            }.serializedBytes() + [0x18, 0x01]
        let twice: [UInt8] = [0x0A, 0x01, 0x61, 0x0A, 0x01, 0x62]
        let accented: [UInt8] = try Modeld_V1_GetObjectsRequest.with { $0.store = "trïps" }.serializedBytes()
        let truncated: [UInt8] = [0x0A, 0x05, 0x61]
        for bytes in [unknown, twice, accented, truncated] {
            #expect(GetObjectsRequestFields(serialized: bytes) == nil, "\(bytes)")
        }
        // SwiftProtobuf reads the first three (the last store given wins) and refuses the fourth.
        #expect(try Modeld_V1_GetObjectsRequest(serializedBytes: unknown).uris == [Self.uri("Trip", 1)])
        #expect(try Modeld_V1_GetObjectsRequest(serializedBytes: twice).store == "b")
        #expect(try Modeld_V1_GetObjectsRequest(serializedBytes: accented).store == "trïps")
        #expect(throws: (any Error).self) { try Modeld_V1_GetObjectsRequest(serializedBytes: truncated) }
    }
}
