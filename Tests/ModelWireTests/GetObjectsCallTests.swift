import Foundation
import ModelCore
import ModelWire
import SwiftProtobuf
import Testing

/// A point read's request written by hand is the message SwiftProtobuf writes, byte for byte,
/// whatever prefix was kept from the requests before it.
@Suite struct GetObjectsCallTests {
    static let store = UUID(), other = UUID()

    static func permanent(_ entity: String, _ key: Int64, store: UUID = store) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: store, entityName: entity, key: .permanent(key))
    }

    /// Requests in a row (one kept prefix, as a connection keeps it): the same store and entity,
    /// others, temporary identifiers, no identifier, no store name, and an entity name long
    /// enough that the URI's length takes two bytes.
    static let calls: [GetObjectsCall] = [
        GetObjectsCall(store: "trips", ids: [permanent("Trip", 1)]),
        GetObjectsCall(store: "trips", ids: [permanent("Trip", 42)]),
        GetObjectsCall(
            store: "trips", ids: [permanent("Trip", 7), permanent("Trip", 1_234_567), permanent("Stop", 2)]),
        GetObjectsCall(store: "trips", ids: [permanent("Trip", 3, store: other)]),
        GetObjectsCall(store: "trips", ids: [permanent("Trip", 3)]),
        GetObjectsCall(store: "trips", ids: [.temporary(storeIdentifier: store, entityName: "Trip")]),
        GetObjectsCall(store: "trips", ids: []),
        GetObjectsCall(store: "", ids: [permanent("Trip", 9)]),
        GetObjectsCall(store: "große Reise", ids: [permanent(String(repeating: "Leg", count: 40), .max)]),
        GetObjectsCall(store: "trips", ids: [permanent("Trip", 0), permanent("Trip", -5)]),
    ]

    @Test func requestsAreTheBytesSwiftProtobufWrites() throws {
        var prefix: PersistentIdentifier.URIPrefix?
        for call in Self.calls {
            let expected: [UInt8] = try call.wire.serializedBytes()
            #expect(call.serializedBytes(prefix: &prefix) == expected, "\(call.store) \(call.ids)")
        }
    }

    /// Kept by a connection's callers (``RequestURIPrefix``), the prefix gives the same bytes,
    /// from tasks at once too.
    @Test func aConnectionsKeptPrefixGivesTheSameBytes() async throws {
        let kept = RequestURIPrefix()
        let expected: [[UInt8]] = try Self.calls.map { try $0.wire.serializedBytes() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<50 {
                        for (call, bytes) in zip(Self.calls, expected) {
                            #expect(kept.serializedBytes(of: call) == bytes)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
