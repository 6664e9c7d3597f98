import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelRemote
import ModelCore
import ModelFixtures
import ModelTesting
import ModelWire
import Testing

/// The daemon as any gRPC client sees it: raw requests, status codes and their metadata, the
/// health service, malformed and oversized requests.
@Suite struct WireTests {
    /// A gRPC client on the daemon's socket, without modeld's client library.
    static func withRaw<T: Sendable>(
        _ socketPath: String, _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> T
    ) async throws -> T {
        let transport = try HTTP2ClientTransport.Posix(
            target: .unixDomainSocket(path: socketPath), transportSecurity: .plaintext)
        return try await withGRPCClient(transport: transport, handleClient: body)
    }

    @Test func healthSaysServing() async throws {
        let daemon = try await TestDaemon.shared
        try await Self.withRaw(daemon.socketPath) { grpc in
            let health = Grpc_Health_V1_Health.Client(wrapping: grpc)
            for service in ["", "modeld.v1.StoreService", "modeld.v1.SessionService", "modeld.v1.QueryService"] {
                let response = try await health.check(Grpc_Health_V1_HealthCheckRequest.with { $0.service = service })
                #expect(response.status == .serving, "\(service)")
            }
            let error = await #expect(throws: RPCError.self) {
                _ = try await health.check(Grpc_Health_V1_HealthCheckRequest.with { $0.service = "nope" })
            }
            #expect(error?.code == .notFound)
        }
    }

    /// Every error carries its gRPC status, a message, and the metadata that rebuilds it.
    @Test func errorsCarryStatusMessageAndMetadata() async throws {
        try await withTestStore(schema: SampleTrips.schema) { store in
            try await Self.withRaw(store.socketPath) { grpc in
                let queries = Modeld_V1_QueryService.Client(wrapping: grpc)
                let cases: [(Modeld_V1_StoreFetchRequest, RPCError.Code, ModelError.Code)] = [
                    (
                        .with {
                            $0.store = store.name; $0.fetch.entity = "Spaceship"
                        }, .invalidArgument, .unknownEntity
                    ),
                    (
                        .with {
                            $0.store = store.name; $0.fetch.entity = "Trip"; $0.fetch.predicate.text = "name =="
                        }, .invalidArgument, .invalidPredicate
                    ),
                    (
                        .with {
                            $0.store = store.name; $0.fetch.entity = "Trip";
                            $0.fetch.predicate.tree = Modeld_V1_PredicateNode()
                        }, .invalidArgument, .invalidPredicate
                    ),
                    (
                        .with {
                            $0.store = store.name; $0.fetch.entity = "Trip";
                            $0.fetch.sort = [.with { $0.keyPath = "name;drop" }]
                        }, .invalidArgument, .invalidArgument
                    ),
                    (
                        .with {
                            $0.store = store.name; $0.fetch.entity = "Trip"; $0.fetch.batchSize = -1
                        }, .invalidArgument, .invalidArgument
                    ),
                    (
                        .with {
                            $0.store = "missing"; $0.fetch.entity = "Trip"
                        }, .notFound, .notFound
                    ),
                    (
                        .with {
                            $0.store = "../../etc"; $0.fetch.entity = "Trip"
                        }, .invalidArgument, .invalidArgument
                    ),
                ]
                for (request, status, code) in cases {
                    let error = await #expect(throws: RPCError.self) {
                        try await queries.fetch(request) { try await $0.messages.reduce(0) { n, _ in n + 1 } }
                    }
                    #expect(error?.code == status, "\(request)")
                    #expect(
                        error?.metadata[stringValues: ModelError.codeMetadataKey].map { $0 } == [code.rawValue],
                        "\(request)")
                    #expect(error.map { !$0.message.isEmpty } == true)
                }
                // Context travels too: the column of a predicate error.
                let error = await #expect(throws: RPCError.self) {
                    try await queries.count(
                        .with {
                            $0.store = store.name; $0.fetch.entity = "Trip";
                            $0.fetch.predicate.text = "name == \"x\" AND"
                        })
                }
                let rebuilt = error.map(ModelError.init)
                #expect(
                    rebuilt?.code == .invalidPredicate && rebuilt?.context["column"] != nil,
                    "\(String(describing: rebuilt))")
            }
        }
    }

    /// Bytes that are not a request, and a request bigger than the daemon accepts, fail that one
    /// call; the daemon keeps serving and the store keeps its data.
    @Test func malformedAndOversizedRequestsHurtNothing() async throws {
        try await TestDaemon.withDaemon(configure: { $0.maximumMessageSize = 256 * 1024 }) { daemon in
            try await withStore(on: daemon, schema: SampleTrips.schema) { store in
                let ids = try await store.insert("Trip", [trip("Kyoto", "2026-04-01", "2026-04-09")])
                try await Self.withRaw(store.socketPath) { grpc in
                    let garbages: [[UInt8]] = [
                        [UInt8](repeating: 0xFF, count: 64), [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
                        Array("not protobuf".utf8),
                    ]
                    for garbage in garbages {
                        let error = await #expect(throws: RPCError.self) {
                            try await grpc.unary(
                                request: ClientRequest(message: garbage),
                                descriptor: Modeld_V1_StoreService.Method.CreateStore.descriptor,
                                serializer: RawBytes(), deserializer: RawBytes(), options: .defaults
                            ) { try $0.message }
                        }
                        #expect(error?.code == .invalidArgument, "\(String(describing: error))")
                    }
                }
                // A predicate tree nested far deeper than the decoder allows.
                var node: [UInt8] = [0x08, 0x01]
                for _ in 0..<5_000 { node = Self.field(5, node) }
                let deep =
                    Self.field(1, Array(store.name.utf8))
                    + Self.field(2, Self.field(1, Array("Trip".utf8)) + Self.field(2, Self.field(2, node)))
                try await Self.withRaw(store.socketPath) { grpc in
                    let error = await #expect(throws: RPCError.self) {
                        try await grpc.unary(
                            request: ClientRequest(message: deep),
                            descriptor: Modeld_V1_QueryService.Method.Count.descriptor,
                            serializer: RawBytes(), deserializer: RawBytes(), options: .defaults
                        ) { try $0.message }
                    }
                    #expect(error?.code == .invalidArgument, "\(String(describing: error))")
                }
                let huge = [ObjectEdit](
                    repeating: .insert(
                        entity: "Trip",
                        attributes: trip(String(repeating: "x", count: 1_000), "2026-01-01", "2026-01-02"),
                        relationships: [:], id: nil), count: 500)
                await #expect(throws: ModelError.self) { try await store.client.apply(huge, in: store.name) }
                #expect(try await store.client.objects(ids, in: store.name).map { $0["name"] } == [.string("Kyoto")])
                #expect(try await store.client.history(after: nil, in: store.name).count == 1)
                #expect(try await store.client.status().stores == 1)
            }
        }
    }

    /// A length-delimited protobuf field, encoded by hand.
    static func field(_ number: UInt8, _ bytes: [UInt8]) -> [UInt8] {
        var length = bytes.count, prefix: [UInt8] = [number << 3 | 2]
        while length >= 0x80 { prefix.append(UInt8(length & 0x7F) | 0x80); length >>= 7 }
        prefix.append(UInt8(length))
        return prefix + bytes
    }

    /// A history response flags a transaction that continues in the next one.
    @Test func bigTransactionsAreSplitAcrossResponses() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            let edits: [ObjectEdit] = (0..<12_000).map {
                .insert(entity: "Library", attributes: ["name": .string("L\($0)")], relationships: [:], id: nil)
            }
            try await store.client.apply(edits, in: store.name)
            let parts = try await Self.withRaw(store.socketPath) { grpc in
                try await Modeld_V1_QueryService.Client(wrapping: grpc).history(.with { $0.store = store.name }) {
                    response in
                    var parts: [(token: Int64, changes: Int, continues: Bool)] = []
                    for try await message in response.messages {
                        for (index, transaction) in message.transactions.enumerated() {
                            parts.append(
                                (
                                    transaction.token, transaction.changes.count,
                                    message.continues && index == message.transactions.count - 1
                                ))
                        }
                    }
                    return parts.map { "\($0.token):\($0.changes):\($0.continues)" }
                }
            }
            #expect(parts.count >= 2, "\(parts)")
            #expect(parts.dropLast().allSatisfy { $0.hasPrefix("1:") && $0.hasSuffix(":true") }, "\(parts)")
            #expect(parts.last?.hasSuffix(":false") == true)
            #expect(parts.map { Int($0.split(separator: ":")[1])! }.reduce(0, +) == 12_000)
        }
    }
}

/// Sends and receives bytes as they are.
struct RawBytes: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}

extension WireTests {
    /// A watched aggregate's groups too many for one message come in several responses, as a
    /// watched fetch's objects do (they came in one, past a client's 4 MiB limit), and are
    /// gathered back whole.
    @Test func theGroupsOfAWatchedAggregateAreSplitAcrossResponses() throws {
        let rows: [AggregateRow] = (0..<5_000).map { ["name": .string("group \($0)"), "n": .int(Int64($0))] }
        let update = WatchUpdate(token: HistoryToken(7), result: .groups(rows))
        let budget = 16 * 1_024
        let responses = update.wireResponses(initial: true, budget: budget)
        #expect(responses.count > 5, "\(responses.count) responses")
        #expect(responses.dropLast().allSatisfy(\.continues) && responses.last?.continues == false)
        for response in responses {
            let size = try response.serializedBytes() as [UInt8]
            #expect(size.count < 2 * budget, "a part of \(size.count) bytes")
        }
        var assembler = WatchResponseAssembler(
            query: .aggregate(
                AggregateDescriptor(entityName: "Trip", groupBy: ["name"], aggregations: [Aggregation("n", .count)])),
            storeIdentifier: nil)
        var gathered: [WatchUpdate] = []
        for response in responses {
            if let whole = try assembler.add(response) { gathered.append(whole) }
        }
        #expect(gathered.count == 1)
        #expect(gathered.first?.result == .groups(rows))
        #expect(gathered.first?.token == HistoryToken(7))
    }
}
