import FramedTransport
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import NIOPosix
import Synchronization
import Testing

/// On both sockets the daemon runs modeld's calls itself, without GRPCCore's server machinery
/// (on HTTP/2, the unary ones and those answered at once). Those calls must keep everything
/// GRPCCore gave them:
/// cancellation that reaches the statement under way, deadlines (LimitsTests), a clear error
/// for a request that does not decode, and streams that arrive whole and in order.
@Suite struct DirectCallTests {
    /// A client that gives up on slow queries (its task cancelled) frees the readers they held:
    /// more cancelled slow queries than the store has readers, then a quick one answers well
    /// before any of them could have finished.
    @Test(arguments: DaemonTransport.allCases)
    func cancellingACallInterruptsItsQuery(_ transport: DaemonTransport) async throws {
        try await withTestStore(schema: Catalog.schema, daemon: .perTest) { store in
            try await SlowQuery.friends(store)
            let slow = FetchDescriptor(entityName: "Person", predicate: try PredicateParser.parse(SlowQuery.predicate))
            try await DaemonClient.withClient(socketPath: store.socketPath, transport: transport) { client in
                for _ in 0..<6 {
                    let outcome = await countCancelled(after: .milliseconds(300), slow, client: client, store: store)
                    #expect(outcome != nil, "the slow query was cancelled, not answered")
                }
            }
            // Uninterrupted, one slow query keeps a reader for about 40 s on an idle machine;
            // the store has three readers. The deadline leaves room for a loaded test run.
            try await withQueryClient(store, transport) { queries in
                var generous = CallOptions.defaults
                generous.timeout = .seconds(20)
                let count = try await queries.count(
                    Modeld_V1_StoreFetchRequest.with {
                        $0.store = store.name; $0.fetch.entity = "Person"
                    },
                    options: generous)
                #expect(count.count == Int64(SlowQuery.people))
            }
        }
    }

    /// Bytes that are not the method's request message are refused with invalidArgument, as
    /// GRPCCore refuses them, and the connection goes on serving.
    @Test func aRequestThatDoesNotDecodeIsRefused() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            try await withFramedGRPCClient(store) { grpc in
                let error = await refusalOfUndecodableRequest(Modeld_V1_QueryService.Method.Count.descriptor, grpc)
                #expect(error?.code == .invalidArgument, "\(String(describing: error))")
                let count = try await Modeld_V1_QueryService.Client(wrapping: grpc)
                    .count(
                        Modeld_V1_StoreFetchRequest.with {
                            $0.store = store.name; $0.fetch.entity = "Person"
                        })
                #expect(count.count == 0)
            }
        }
    }

    /// A fetch streamed in many small responses arrives whole, in its sort order, in batches no
    /// bigger than asked, the same over both transports; a short one (one response, held back
    /// to leave with the status) too; and a fetch the store refuses fails the same way on both.
    @Test func streamedFetchesArriveWholeAndInOrder() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            let names = (0..<250).map { String(format: "person %03d", ($0 * 37) % 250) }
            try await store.client.apply(
                names.map { .insert(entity: "Person", attributes: ["name": .string($0)], relationships: [:], id: nil) },
                in: store.name)
            let sorted = FetchDescriptor(entityName: "Person", sortBy: [SortDescriptor(PropertyPath(["name"]))])
            var answers: [DaemonTransport: [String]] = [:]
            for transport in [DaemonTransport.framed, .http2] {
                try await DaemonClient.withClient(socketPath: store.socketPath, transport: transport) { client in
                    let batches = Mutex<[[String]]>([])
                    let count = try await client.fetch(sorted, in: store.name, batchSize: 7) { batch in
                        let names = batch.map { object -> String in
                            guard case .string(let name) = object.attributes["name"] else { return "" }
                            return name
                        }
                        batches.withLock { $0.append(names) }
                    }
                    let received = batches.withLock { $0 }
                    #expect(count == 250)
                    #expect(received.allSatisfy { $0.count <= 7 } && received.count >= 36, "\(received.map(\.count))")
                    answers[transport] = received.flatMap { $0 }

                    var firstFifty = sorted
                    firstFifty.limit = 50
                    guard case .objects(let objects, _) = try await client.fetch(firstFifty, in: store.name) else {
                        Issue.record("an objects fetch answered something else")
                        return
                    }
                    #expect(objects.map { $0.attributes["name"] } == names.sorted().prefix(50).map { .string($0) })

                    let error = await #expect(throws: ModelError.self) {
                        _ = try await client.fetch(FetchDescriptor(entityName: "Nobody"), in: store.name)
                    }
                    #expect(
                        error?.code == .unknownEntity && error?.message.contains("Nobody") == true,
                        "\(String(describing: error))")
                }
            }
            #expect(answers[.framed] == names.sorted())
            #expect(answers[.http2] == names.sorted())
        }
    }

    /// A reader that stops early (its body throws after the first batch) ends the stream: the
    /// error is the reader's own, the daemon is told to stop, and the connection goes on serving.
    @Test func aReaderThatStopsEarlyEndsTheStream() async throws {
        struct Enough: Error {}
        try await withTestStore(schema: Catalog.schema) { store in
            try await store.client.apply(
                (0..<300).map {
                    .insert(entity: "Person", attributes: ["name": .string("p\($0)")], relationships: [:], id: nil)
                },
                in: store.name)
            try await DaemonClient.withClient(socketPath: store.socketPath, transport: .framed) { client in
                for _ in 0..<20 {
                    let batches = Atomic(0)
                    await #expect(throws: Enough.self) {
                        try await client.fetch(FetchDescriptor(entityName: "Person"), in: store.name, batchSize: 10) {
                            _ in
                            batches.add(1, ordering: .relaxed)
                            throw Enough()
                        }
                    }
                    #expect(batches.load(ordering: .relaxed) == 1)
                }
                let count = try await client.count(FetchDescriptor(entityName: "Person"), in: store.name)
                #expect(count == 300)
            }
        }
    }
}

extension DirectCallTests {
    /// A task that prefers the connection's executor runs on its event loop between calls, and
    /// its calls answer as anywhere else: saves, point reads, a fetch streamed in many batches,
    /// counts, history, and a call cancelled midway. Over HTTP/2 there is no such executor.
    @Test func callsOnTheConnectionsExecutorAnswerTheSame() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            try await DaemonClient.withClient(socketPath: store.socketPath, transport: .framed) { client in
                let executor = try #require(client.preferredExecutor)
                try await withTaskExecutorPreference(executor) {
                    let names = (0..<120).map { String(format: "n%03d", ($0 * 53) % 120) }
                    try await client.apply(
                        names.map {
                            .insert(entity: "Person", attributes: ["name": .string($0)], relationships: [:], id: nil)
                        },
                        in: store.name)
                    #expect(
                        MultiThreadedEventLoopGroup.currentEventLoop != nil,
                        "the task resumed off the connection's event loop")
                    let ids = try await client.fetch(
                        FetchDescriptor(entityName: "Person", resultType: .identifiers), in: store.name
                    ).identifiers
                    #expect(ids.count == 120)
                    for id in ids.prefix(10) {
                        let found = try await client.objects([id], in: store.name)
                        #expect(found.map(\.id) == [id])
                    }
                    let batches = Mutex<[String]>([])
                    let count = try await client.fetch(
                        FetchDescriptor(entityName: "Person", sortBy: [SortDescriptor(PropertyPath(["name"]))]),
                        in: store.name, batchSize: 9
                    ) { batch in
                        batches.withLock {
                            $0 += batch.map { if case .string(let name) = $0.attributes["name"] { name } else { "" } }
                        }
                    }
                    #expect(count == 120 && batches.withLock { $0 } == names.sorted())
                    #expect(try await client.count(FetchDescriptor(entityName: "Person"), in: store.name) == 120)
                    #expect(try await client.history(after: nil, in: store.name).count == 1)

                    try await SlowQuery.friends(store)
                    let slow = FetchDescriptor(
                        entityName: "Person", predicate: try PredicateParser.parse(SlowQuery.predicate))
                    let outcome = await countCancelled(after: .milliseconds(200), slow, client: client, store: store)
                    #expect((outcome as? ModelError)?.code == .cancelled, "\(String(describing: outcome))")
                    #expect(MultiThreadedEventLoopGroup.currentEventLoop != nil)
                }
            }
            try await DaemonClient.withClient(socketPath: store.socketPath, transport: .http2) { client in
                #expect(client.preferredExecutor == nil)
            }
        }
    }
}

extension DirectCallTests {
    /// A call's frames go straight into the socket (from the connection's event loop: at once
    /// for a task that prefers its executor, in a task on the loop for one that does not), and
    /// SwiftNIO gets what the socket cannot take at once. Saves whose requests are larger than
    /// the socket takes (strings of 600,000 bytes), from three tasks at once beside two tasks of
    /// point reads, all on one connection: every call is answered, and each save reads back
    /// whole. Had a call's frames come between another's bytes, the daemon would have read a
    /// frame it does not know and closed the connection.
    @Test(arguments: [true, false])
    func largeRequestsBesideSmallCalls(onTheConnectionsExecutor: Bool) async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            try await DaemonClient.withClient(socketPath: store.socketPath, transport: .framed) { client in
                let executor = onTheConnectionsExecutor ? try #require(client.preferredExecutor) : nil
                let seed = try await client.apply(
                    [.insert(entity: "Person", attributes: ["name": .string("seed")], relationships: [:], id: nil)],
                    in: store.name)
                let seedID = try #require(seed.remappedIdentifiers.values.first)
                try await withTaskExecutorPreference(executor) {
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        for writer in 0..<3 {
                            group.addTask {
                                let letter = String(UnicodeScalar(UInt8(ascii: "a") + UInt8(writer)))
                                for round in 0..<3 {
                                    let name = String(repeating: letter, count: 600_000 + round)
                                    let saved = try await client.apply(
                                        [
                                            .insert(
                                                entity: "Person", attributes: ["name": .string(name)],
                                                relationships: [:], id: nil)
                                        ], in: store.name)
                                    let id = try #require(saved.remappedIdentifiers.values.first)
                                    let found = try await client.objects([id], in: store.name)
                                    #expect(found.first?.attributes["name"] == .string(name))
                                }
                                return 3
                            }
                        }
                        for _ in 0..<2 {
                            group.addTask {
                                for _ in 0..<200 {
                                    let found = try await client.objects([seedID], in: store.name)
                                    #expect(found.first?.attributes["name"] == .string("seed"))
                                }
                                return 0
                            }
                        }
                        var saves = 0
                        for try await count in group { saves += count }
                        #expect(saves == 9)
                    }
                }
                #expect(try await client.count(FetchDescriptor(entityName: "Person"), in: store.name) == 10)
            }
        }
    }
}

extension DirectCallTests {
    /// On the framed socket a point read (`GetObjects`) is answered on the event loop that read
    /// it, without a task; over HTTP/2 it goes through GRPCCore. Both answer the same: the
    /// objects found in the order asked (a missing one left out), and the same status for an
    /// unknown store, a URI of another store, a malformed URI and bytes that are not a request;
    /// and each connection goes on serving after every refusal.
    @Test func pointReadsAnsweredAtOnceAnswerAsOverHTTP2() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            try await store.client.apply(
                (0..<5).map {
                    .insert(entity: "Person", attributes: ["name": .string("p\($0)")], relationships: [:], id: nil)
                },
                in: store.name)
            let ids = try await store.client.fetch(
                FetchDescriptor(entityName: "Person", resultType: .identifiers), in: store.name
            ).identifiers
            let missing = PersistentIdentifier(
                storeIdentifier: store.info.storeIdentifier, entityName: "Person", key: .permanent(9_999))
            let other = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Person", key: .permanent(1))
            let asked = [ids[3], missing, ids[0]].map(\.uriRepresentation)
            let refusals: [(String, [String], RPCError.Code)] = [
                ("no-such-store", asked, .notFound),
                (store.name, [other.uriRepresentation], .invalidArgument),
                (store.name, ["not a uri"], .invalidArgument),
            ]
            for transport in [DaemonTransport.framed, .http2] {
                try await withQueryClient(store, transport) { queries in
                    let found = try await queries.getObjects(
                        .with {
                            $0.store = store.name; $0.uris = asked
                        })
                    #expect(found.objects.map(\.uri) == [ids[3], ids[0]].map(\.uriRepresentation), "\(transport)")
                    #expect(found.objects.first?.attributes["name"]?.stringValue == "p3", "\(transport)")
                    for (storeName, uris, code) in refusals {
                        let error = await #expect(throws: RPCError.self) {
                            _ = try await queries.getObjects(
                                .with {
                                    $0.store = storeName; $0.uris = uris
                                })
                        }
                        #expect(error?.code == code, "\(transport), \(storeName) \(uris): \(String(describing: error))")
                    }
                    let again = try await queries.getObjects(
                        .with {
                            $0.store = store.name; $0.uris = asked
                        })
                    #expect(again.objects.count == 2, "\(transport)")
                }
            }
            try await withFramedGRPCClient(store) { grpc in
                let error = await refusalOfUndecodableRequest(Modeld_V1_QueryService.Method.GetObjects.descriptor, grpc)
                #expect(error?.code == .invalidArgument, "\(String(describing: error))")
            }
        }
    }
}

extension DirectCallTests {
    /// A small fetch (a count, or fewer objects or identifiers than a batch) is answered in the
    /// loop's turn that read it on the framed socket; a larger one is streamed as before. Every
    /// kind answers as over HTTP/2, refusals included, to GRPCCore's own client on both
    /// transports, which refuses a stream whose response metadata comes twice (a streamed
    /// fetch's last response once brought a second set).
    @Test func smallFetchesAnsweredAtOnceAnswerAsOverHTTP2() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            try await store.client.apply(
                (0..<40).map {
                    .insert(
                        entity: "Person", attributes: ["name": .string(String(format: "p%02d", ($0 * 7) % 40))],
                        relationships: [:], id: nil)
                },
                in: store.name)
            func request(_ build: (inout Modeld_V1_FetchRequest) -> Void) -> Modeld_V1_StoreFetchRequest {
                .with {
                    $0.store = store.name
                    $0.fetch.entity = "Person"
                    $0.fetch.sort = [.with { $0.keyPath = "name" }]
                    build(&$0.fetch)
                }
            }
            let asked: [(String, Modeld_V1_StoreFetchRequest)] = [
                ("five objects", request { $0.limit = 5 }),
                ("a batch of ten, all streamed", request { $0.batchSize = 10 }),
                (
                    "identifiers",
                    request {
                        $0.limit = 3; $0.resultType = .identifiers
                    }
                ),
                ("a count", request { $0.resultType = .count }),
            ]
            let refused: [(String, Modeld_V1_StoreFetchRequest, RPCError.Code)] = [
                ("an unknown entity", request { $0.entity = "Nobody" }, .invalidArgument),
                ("a batch size out of range", request { $0.batchSize = 20_000 }, .invalidArgument),
            ]
            var answers: [DaemonTransport: [String]] = [:]
            for transport in [DaemonTransport.framed, .http2] {
                try await withQueryClient(store, transport) { queries in
                    var seen: [String] = []
                    for (what, request) in asked {
                        let responses = try await queries.fetch(request) { response in
                            var all: [Modeld_V1_FetchResponse] = []
                            for try await message in response.messages { all.append(message) }
                            return all
                        }
                        let names = responses.flatMap(\.objects).map { $0.attributes["name"]?.stringValue ?? "?" }
                        seen.append(
                            "\(what): \(responses.count) responses, \(names), \(responses.flatMap(\.identifiers).count) ids, count \(responses.last?.count ?? -1)"
                        )
                    }
                    for (what, request, code) in refused {
                        let error = await #expect(throws: RPCError.self) {
                            try await queries.fetch(request) { response in
                                for try await _ in response.messages {}
                            }
                        }
                        seen.append("\(what): \(String(describing: error?.code))")
                        #expect(error?.code == code, "\(transport), \(what): \(String(describing: error))")
                    }
                    // Counts are answered at once too.
                    let counted = try await queries.count(
                        request { $0.predicate = Modeld_V1_Predicate(try! PredicateParser.parse("name < \"p10\"")) })
                    seen.append("Count: \(counted.count)")
                    let error = await #expect(throws: RPCError.self) {
                        _ = try await queries.count(request { $0.entity = "Nobody" })
                    }
                    seen.append("Count of an unknown entity: \(String(describing: error?.code))")
                    answers[transport] = seen
                }
            }
            #expect(answers[.framed] == answers[.http2])
            let framed = answers[.framed] ?? []
            #expect(
                framed.first
                    == "five objects: 1 responses, [\"p00\", \"p01\", \"p02\", \"p03\", \"p04\"], 0 ids, count 5")
            // Four full batches, then the count in a response of its own.
            #expect(
                framed.dropFirst().first?.hasPrefix("a batch of ten, all streamed: 5 responses") == true, "\(framed)")
            #expect(framed.dropFirst(2).first == "identifiers: 1 responses, [], 3 ids, count 3")
            #expect(framed.dropFirst(3).first == "a count: 1 responses, [], 0 ids, count 40")
            #expect(framed.suffix(2) == ["Count: 10", "Count of an unknown entity: Optional(invalidArgument)"])
        }
    }
}
