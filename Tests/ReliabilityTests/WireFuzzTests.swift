import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelRemote
import ModelCore
import ModelFixtures
import ModelTesting
import ModelWire
import SQLiteStorage
import SwiftProtobuf
import Testing

/// Mutated requests of every method, sent as raw bytes over a real socket: each one gets an
/// answer or a status (no hang: every call has a deadline), the daemon keeps serving, and a store
/// no request names keeps its data.
@Suite struct WireFuzzTests {
    struct Method: Sendable {
        let descriptor: MethodDescriptor
        let streaming: Bool
        let bytes: [UInt8]
    }

    static func methods(store: String, session: String, victim: String, uuid: UUID) throws -> [Method] {
        let trip = PersistentIdentifier(storeIdentifier: uuid, entityName: "Trip", key: .permanent(1))
        let fetch = FetchDescriptor(
            entityName: "Trip",
            predicate: try PredicateParser.parse(#"name BEGINSWITH "K" AND bucketList.@count >= 0"#),
            sortBy: [SortDescriptor("startDate", ascending: false)], limit: 10)
        let insert = ObjectEdit.insert(
            entity: "Trip",
            attributes: [
                "name": .string("F"), "destination": .string("d"),
                "startDate": .string("2026-01-01"), "endDate": .string("2026-01-02"),
            ],
            relationships: [:], id: nil)
        func unary<M: SwiftProtobuf.Message>(_ descriptor: MethodDescriptor, _ message: M) throws -> Method {
            Method(descriptor: descriptor, streaming: false, bytes: try message.serializedBytes())
        }
        func stream<M: SwiftProtobuf.Message>(_ descriptor: MethodDescriptor, _ message: M) throws -> Method {
            Method(descriptor: descriptor, streaming: true, bytes: try message.serializedBytes())
        }
        typealias S = Modeld_V1_StoreService.Method
        typealias E = Modeld_V1_SessionService.Method
        typealias Q = Modeld_V1_QueryService.Method
        return [
            try unary(
                S.CreateStore.descriptor,
                Modeld_V1_CreateStoreRequest.with {
                    $0.name = "fz-new"; $0.kind = .memory
                }),
            try unary(S.ListStores.descriptor, Modeld_V1_ListStoresRequest()),
            try unary(S.GetStore.descriptor, Modeld_V1_GetStoreRequest.with { $0.name = store }),
            try unary(S.DropStore.descriptor, Modeld_V1_DropStoreRequest.with { $0.name = victim }),
            try unary(S.GetSchema.descriptor, Modeld_V1_GetSchemaRequest.with { $0.store = store }),
            try unary(
                S.ApplySchema.descriptor,
                Modeld_V1_ApplySchemaRequest.with {
                    $0.store = store; $0.schema = SampleTrips.schema.wire
                }),
            try unary(
                E.OpenSession.descriptor,
                Modeld_V1_OpenSessionRequest.with {
                    $0.store = store; $0.author = "fuzz"
                }),
            try unary(
                E.Stage.descriptor,
                Modeld_V1_StageRequest.with {
                    $0.sessionID = session; $0.changes = [insert.wire]
                }),
            try unary(
                E.Save.descriptor,
                Modeld_V1_SaveRequest.with {
                    $0.sessionID = session; $0.returnTransaction = true
                }),
            try unary(E.Rollback.descriptor, Modeld_V1_RollbackRequest.with { $0.sessionID = session }),
            try unary(
                E.Count.descriptor,
                Modeld_V1_SessionFetchRequest.with {
                    $0.sessionID = session; $0.fetch = fetch.wire
                }),
            try unary(
                E.GetObjects.descriptor,
                Modeld_V1_SessionGetObjectsRequest.with {
                    $0.sessionID = session; $0.uris = [trip.uriRepresentation]
                }),
            try unary(E.DescribeSession.descriptor, Modeld_V1_DescribeSessionRequest.with { $0.sessionID = session }),
            try stream(
                E.Fetch.descriptor,
                Modeld_V1_SessionFetchRequest.with {
                    $0.sessionID = session; $0.fetch = fetch.wire
                }),
            try unary(
                Q.Count.descriptor,
                Modeld_V1_StoreFetchRequest.with {
                    $0.store = store; $0.fetch = fetch.wire
                }),
            try unary(
                Q.Aggregate.descriptor,
                Modeld_V1_StoreAggregateRequest.with {
                    $0.store = store
                    $0.aggregate =
                        AggregateDescriptor(
                            entityName: "Trip", groupBy: ["destination"], aggregations: [Aggregation("n", .count)]
                        ).wire
                }),
            try unary(
                Q.GetObjects.descriptor,
                Modeld_V1_GetObjectsRequest.with {
                    $0.store = store; $0.uris = [trip.uriRepresentation]
                }),
            try unary(
                Q.Apply.descriptor,
                Modeld_V1_ApplyRequest.with {
                    $0.store = store; $0.changes = [insert.wire]
                }),
            try unary(
                Q.BatchUpdate.descriptor,
                Modeld_V1_BatchUpdateRequest.with {
                    $0.store = store; $0.entity = "Trip"; $0.predicate.text = #"name == "F""#;
                    $0.attributes = ["destination": Value.string("e").wire]
                }),
            try unary(
                Q.BatchDelete.descriptor,
                Modeld_V1_BatchDeleteRequest.with {
                    $0.store = store; $0.entity = "Trip"; $0.predicate.text = #"name == "F""#
                }),
            try stream(
                Q.Fetch.descriptor,
                Modeld_V1_StoreFetchRequest.with {
                    $0.store = store; $0.fetch = fetch.wire
                }),
            try stream(
                Q.History.descriptor,
                Modeld_V1_HistoryRequest.with {
                    $0.store = store; $0.after = 1
                }),
            try unary(Modeld_V1_DaemonService.Method.Status.descriptor, Modeld_V1_StatusRequest()),
        ]
    }

    @Test func mutatedRequestsOverTheSocketHurtNothing() async throws {
        let directory = try TemporaryDirectory.make(prefix: "wf")
        defer { try? FileManager.default.removeItem(at: directory) }
        var statuses: [String: Int] = [:]
        try await TestDaemon.withDaemon(directory: directory, configure: { $0.maximumSessions = 200 }) { daemon in
            try await daemon.withClient { client in
                let store = try await client.createStore("fuzz", schema: SampleTrips.schema)
                try await client.createStore("victim")
                let sentinel = try await client.createStore("sentinel", schema: SampleTrips.schema)
                try await client.apply(
                    [
                        .insert(
                            entity: "Trip",
                            attributes: [
                                "name": .string("Keep"), "destination": .string("x"),
                                "startDate": .string("2026-01-01"), "endDate": .string("2026-01-02"),
                            ],
                            relationships: [:], id: nil)
                    ], in: "sentinel")
                let before = try await client.fetch(FetchDescriptor(entityName: "Trip"), in: "sentinel").objects
                let session = try await client.openSession(on: "fuzz")
                let methods = try Self.methods(
                    store: "fuzz", session: session.id, victim: "victim", uuid: store.storeIdentifier)

                let transport = try HTTP2ClientTransport.Posix(
                    target: .unixDomainSocket(path: daemon.socketPath), transportSecurity: .plaintext)
                statuses = try await withGRPCClient(transport: transport) { grpc in
                    var random = SeededRandom(seed: 0x50C4E7)
                    var statuses: [String: Int] = [:]
                    var options = CallOptions.defaults
                    options.timeout = .seconds(5)
                    // A mutation may turn a history request into one that follows forever: its
                    // deadline ends it.
                    var streamOptions = CallOptions.defaults
                    streamOptions.timeout = .seconds(1)
                    for _ in 0..<3_000 {
                        let method = random.pick(methods)
                        var bytes = method.bytes
                        for _ in 0..<random.int(0...3) where !bytes.isEmpty {
                            let position = random.int(0...(bytes.count - 1))
                            switch random.int(0...3) {
                            case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
                            case 1: bytes[position] ^= 1 << UInt8(random.int(0...7))
                            case 2: bytes.remove(at: position)
                            default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                            }
                        }
                        let outcome: String
                        do {
                            if method.streaming {
                                try await grpc.serverStreaming(
                                    request: ClientRequest(message: bytes), descriptor: method.descriptor,
                                    serializer: RawBytes(),
                                    deserializer: RawBytes(), options: streamOptions
                                ) { response in
                                    for try await _ in response.messages {}
                                }
                            } else {
                                _ = try await grpc.unary(
                                    request: ClientRequest(message: bytes), descriptor: method.descriptor,
                                    serializer: RawBytes(),
                                    deserializer: RawBytes(), options: options
                                ) { try $0.message }
                            }
                            outcome = "ok"
                        } catch let error as RPCError {
                            outcome = "\(error.code)"
                            #expect(error.code != .internalError, "\(method.descriptor): \(error)")
                        }
                        statuses[outcome, default: 0] += 1
                    }
                    return statuses
                }
                #expect(try await client.status().stores >= 2)
                #expect(try await client.fetch(FetchDescriptor(entityName: "Trip"), in: "sentinel").objects == before)
                #expect(try await client.history(after: nil, in: "sentinel").count == 1)
                #expect(sentinel.name == "sentinel")
            }
        }
        #expect((statuses["ok"] ?? 0) > 300 && (statuses["invalidArgument"] ?? 0) > 300, "\(statuses)")
        // The store every request hammered is sound.
        let store = try await SQLiteStore.open(path: directory.appendingPathComponent("data/stores/fuzz.sqlite").path)
        #expect(try await store.integrityCheck() == ["ok"])
        await store.close()
    }
}

/// Sends and receives bytes as they are.
struct RawBytes: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}
