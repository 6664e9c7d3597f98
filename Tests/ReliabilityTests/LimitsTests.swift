import Foundation
import FramedTransport
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelRemote
import ModelServer
import ModelCore
import ModelFixtures
import ModelTesting
import ModelWire
import Testing

/// Requests beyond the daemon's limits are refused or cancelled cleanly, and one slow or stuck
/// client does not hold up the others.
@Suite struct LimitsTests {
    typealias Predicate = ModelCore.Predicate

    static func nested(_ depth: Int) -> ModelCore.Predicate {
        var predicate = ModelCore.Predicate.constant(true)
        for _ in 0..<depth { predicate = .not(predicate) }
        return predicate
    }

    /// On the framed socket a request is held to `--max-message-size` exactly (it once took up
    /// to a kilobyte more), and the refusal carries modeld's error metadata as every error does.
    @Test func theFramedSocketHoldsARequestToTheLimitExactly() async throws {
        let limit = 64 * 1024
        try await TestDaemon.withDaemon(configure: { $0.maximumMessageSize = limit }) { daemon in
            let path = try #require(DefaultLocations.framedSocketPath(for: daemon.socketPath))
            let connection = try BlockingFramedConnection(path: path)
            defer { connection.close() }
            let method = MethodDescriptor(fullyQualifiedService: "modeld.v1.QueryService", method: "Apply")
            // Bytes that are no request: at the limit they are read, and refused as such.
            let atLimit = #expect(throws: RPCError.self) {
                _ = try connection.unary(method, request: [UInt8](repeating: 0xff, count: limit))
            }
            #expect(atLimit?.code == .invalidArgument, "\(String(describing: atLimit))")
            let over = #expect(throws: RPCError.self) {
                _ = try connection.unary(method, request: [UInt8](repeating: 0xff, count: limit + 1))
            }
            #expect(over?.code == .resourceExhausted, "\(String(describing: over))")
            #expect(over?.message.contains("maximum message size of \(limit) bytes") == true)
            #expect(
                over?.metadata[stringValues: ModelError.codeMetadataKey].first(where: { _ in true })
                    == "resourceExhausted", "\(String(describing: over?.metadata))")
            // The connection still serves.
            let answer = try connection.unary(Modeld_V1_DaemonService.Method.Status.descriptor, request: [])
            #expect(try Modeld_V1_StatusResponse(serializedBytes: answer).version == ModelDaemon.version)
        }
    }

    /// A request refused for the pending budget is told what is held, and one bigger than the
    /// whole budget that it can never be taken (it was told "0 MiB" held, and to send again).
    @Test func aRefusalForThePendingBudgetSaysWhetherTheRequestCanFit() {
        let budget = RequestBudget(capacity: 1_048_576)
        #expect(budget.reserve(900_000))
        #expect(!budget.reserve(200_000))
        #expect(budget.refusal(for: 200_000).contains("holding 900000 bytes"), "\(budget.refusal(for: 200_000))")
        #expect(budget.refusal(for: 200_000).contains("send it again shortly"))
        let never = budget.refusal(for: 2_000_000)
        #expect(never.contains("more than modeld holds") && !never.contains("again"), "\(never)")
    }

    @Test func oversizedDeepAndHugeRequestsAreRefused() async throws {
        try await TestDaemon.withDaemon(configure: { $0.maximumMessageSize = 4 * 1024 * 1024 }) { daemon in
            try await withStore(on: daemon, schema: Catalog.schema) { store in
                try await store.client.apply(
                    (0..<50).map {
                        .insert(entity: "Library", attributes: ["name": .string("L\($0)")], relationships: [:], id: nil)
                    },
                    in: store.name)
                // Bigger than --max-message-size.
                let big = String(repeating: "x", count: 5_000_000)
                let oversized = await #expect(throws: ModelError.self) {
                    try await store.client.apply(
                        [.insert(entity: "Library", attributes: ["name": .string(big)], relationships: [:], id: nil)],
                        in: store.name)
                }
                #expect(
                    oversized?.code == .resourceExhausted
                        && oversized?.message.contains("maximum message size") == true,
                    "\(String(describing: oversized))")

                // Nested deeper than a predicate may be.
                let deep = await #expect(throws: ModelError.self) {
                    _ = try await store.client.count(
                        FetchDescriptor(entityName: "Library", predicate: Self.nested(Predicate.maximumDepth + 5)),
                        in: store.name)
                }
                #expect(
                    deep?.code == .resourceExhausted
                        && deep?.message.contains("nested more than \(Predicate.maximumDepth) levels") == true,
                    "\(String(describing: deep))")
                #expect(
                    try await store.client.count(
                        FetchDescriptor(entityName: "Library", predicate: Self.nested(Predicate.maximumDepth - 2)),
                        in: store.name) == 50)

                // IN lists: up to 100,000 values, checked against every stored name.
                let names = (0..<60_000).map { ModelCore.Expression.literal(.string("L\($0)")) }
                let inList = ModelCore.Predicate.comparison(Comparison(.keyPath("name"), .in, .list(names)))
                #expect(
                    try await store.client.count(
                        FetchDescriptor(entityName: "Library", predicate: inList), in: store.name) == 50)
                let tooMany = ModelCore.Predicate.comparison(
                    Comparison(.keyPath("name"), .in, .list((0..<100_001).map { .literal(.int(Int64($0))) })))
                let huge = await #expect(throws: ModelError.self) {
                    _ = try await store.client.count(
                        FetchDescriptor(entityName: "Library", predicate: tooMany), in: store.name)
                }
                #expect(
                    huge?.code == .resourceExhausted && huge?.message.contains("100000 are allowed") == true,
                    "\(String(describing: huge))")
                // The daemon still serves, and holds what it held.
                #expect(try await store.client.count(FetchDescriptor(entityName: "Library"), in: store.name) == 50)
            }
        }
    }

    /// A query whose deadline passes is cancelled: its statement is interrupted, so that readers
    /// are free for the next calls rather than busy for seconds with answers nobody waits for.
    /// On the framed socket too, where the daemon hands calls with a deadline to GRPCCore.
    @Test(arguments: DaemonTransport.allCases)
    func deadlinesCancelQueriesMidway(_ transport: DaemonTransport) async throws {
        try await withTestStore(schema: Catalog.schema, daemon: .perTest) { store in
            try await SlowQuery.friends(store)
            try await withQueryClient(store, transport) { queries in
                var short = CallOptions.defaults
                short.timeout = .milliseconds(300)
                // More timed-out slow queries than the store has readers…
                for _ in 0..<6 {
                    let error = await #expect(throws: RPCError.self) {
                        _ = try await queries.count(
                            Modeld_V1_StoreFetchRequest.with {
                                $0.store = store.name
                                $0.fetch.entity = "Person"
                                $0.fetch.predicate.text = SlowQuery.predicate
                            }, options: short)
                    }
                    #expect(
                        error?.code == .deadlineExceeded || error?.code == .cancelled, "\(String(describing: error))")
                }
                // …and a quick query still answers within its own deadline: 20 s, room for a
                // loaded machine (the whole suite on two cores) yet far less than the six slow
                // queries would hold the readers for had they not been interrupted.
                var generous = CallOptions.defaults
                generous.timeout = .seconds(20)
                let count = try await queries.count(
                    Modeld_V1_StoreFetchRequest.with {
                        $0.store = store.name; $0.fetch.entity = "Person"
                    }, options: generous)
                #expect(count.count == Int64(SlowQuery.people))
            }
        }
    }

    /// A client that starts a big streamed fetch and stops reading does not hold up others.
    @Test func aStuckClientDoesNotStallOthers() async throws {
        try await withTestStore(schema: Catalog.schema, daemon: .perTest) { store in
            let blob = String(repeating: "b", count: 2_000)
            for part in 0..<4 {
                try await store.client.apply(
                    (0..<2_500).map {
                        .insert(
                            entity: "Library", attributes: ["name": .string("\(part)-\($0) \(blob)")],
                            relationships: [:], id: nil)
                    },
                    in: store.name)
            }
            let transport = try HTTP2ClientTransport.Posix(
                target: .unixDomainSocket(path: store.socketPath), transportSecurity: .plaintext)
            try await withGRPCClient(transport: transport) { grpc in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    let started = TestEvent()
                    group.addTask {
                        // Reads one batch of 10,000 objects, then sits on the stream.
                        try await Modeld_V1_QueryService.Client(wrapping: grpc).fetch(
                            Modeld_V1_StoreFetchRequest.with {
                                $0.store = store.name
                                $0.fetch.entity = "Library"
                                $0.fetch.batchSize = 100
                            }
                        ) { response in
                            for try await _ in response.messages {
                                started.signal()
                                try await Task.sleep(for: .seconds(3_600))
                            }
                        }
                    }
                    #expect(await started.wait(), "the fetch's first batch never arrived")
                    // Everyone else goes on: sessions, saves, queries.
                    try await DaemonClient.withClient(socketPath: store.socketPath) { other in
                        for index in 0..<100 {
                            let session = try await other.openSession(on: store.name)
                            _ = try await session.insert("Library", attributes: ["name": .string("other \(index)")])
                            try await session.save()
                            try await session.close()
                        }
                        #expect(
                            try await other.count(
                                FetchDescriptor(
                                    entityName: "Library",
                                    predicate: try PredicateParser.parse("name BEGINSWITH \"other\"")),
                                in: store.name) == 100)
                    }
                    group.cancelAll()
                }
            }
        }
    }
}

/// A query that takes SQLite seconds: three levels of SUBQUERY over 2,000 people with 20
/// friends each.
enum SlowQuery {
    static let people = 2_000
    static let predicate =
        "SUBQUERY(friends, $f, SUBQUERY($f.friends, $g, SUBQUERY($g.friends, $h, $h.name LIKE \"*zz*\").@count > 0).@count > 0).@count > 0"

    static func friends(_ store: TestStore) async throws {
        let uuid = store.info.storeIdentifier
        let ids = (0..<people).map { _ in
            PersistentIdentifier(storeIdentifier: uuid, entityName: "Person", key: .temporary(UUID()))
        }
        var edits: [ObjectEdit] = ids.enumerated().map { index, id in
            .insert(entity: "Person", attributes: ["name": .string("p\(index)")], relationships: [:], id: id)
        }
        for (index, id) in ids.enumerated() {
            edits.append(.add((1...20).map { ids[(index * 7 + $0 * 13) % people] }, relationship: "friends", of: id))
        }
        try await store.client.apply(edits, in: store.name)
    }
}
