import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// A fetch with a small limit (at most 1,000 objects, nothing prefetched) has its responses
/// gathered on the framed connection and read when the call ends, rather than read from a
/// stream of responses (`FramedClientTransport.gatheredServerStreaming`). It must answer what
/// the stream answers: every response, in order, however many the daemon sends, its errors as
/// the stream's, and a cancelled one must stop its query.
@Suite struct GatheredFetchTests {
    /// With a small message size (`--max-message-size 256K`: responses of about 32 KB), a fetch
    /// of 300 objects of 500 bytes within its limit leaves the daemon in many responses; gathered,
    /// they arrive whole and in the fetch's order, as the same fetch read batch by batch does,
    /// and as the same limit over HTTP/2 (read as a stream) does; a session's fetch too.
    @Test func everyResponseOfABoundedFetchArrivesInOrder() async throws {
        try await StalledClients.withDaemon(arguments: ["--max-message-size", "256K"]) { daemon in
            try await StalledClients.makeStore("blobs", on: daemon, rows: 400, bytes: 500)
            // Sorted against the order of the keys, so that an answer put together out of
            // order cannot pass.
            let bounded = FetchDescriptor(
                entityName: "Blob", sortBy: [SortDescriptor(PropertyPath(["name"]), ascending: false)], limit: 300)
            let expected = (100..<400).reversed().map { String(format: "blob %06d", $0) }

            try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .framed) { client in
                let batches = Mutex<[[String]]>([])
                let count = try await client.fetch(bounded, in: "blobs") { batch in
                    batches.withLock { $0.append(batch.map(Self.name)) }
                }
                let streamed = batches.withLock { $0 }
                #expect(count == 300)
                #expect(streamed.count >= 4, "the daemon sent \(streamed.count) responses, not many")
                #expect(streamed.flatMap { $0 } == expected)

                guard case .objects(let objects, let prefetched) = try await client.fetch(bounded, in: "blobs") else {
                    Issue.record("a fetch of objects answered something else")
                    return
                }
                #expect(objects.map(Self.name) == expected)
                #expect(objects.allSatisfy { $0["body"] == .string(String(repeating: "b", count: 500)) })
                #expect(prefetched.isEmpty)

                var identifiers = bounded
                identifiers.resultType = .identifiers
                guard case .identifiers(let ids) = try await client.fetch(identifiers, in: "blobs") else {
                    Issue.record("a fetch of identifiers answered something else")
                    return
                }
                #expect(ids == objects.map(\.id))

                // A session's fetch, which shows its unsaved insert first, is gathered too.
                let session = try await client.openSession(on: "blobs")
                _ = try await session.insert(
                    "Blob", attributes: ["name": .string("blob 999999"), "body": .string("unsaved")])
                guard case .objects(let seen, _) = try await session.fetch(bounded) else {
                    Issue.record("a session's fetch of objects answered something else")
                    return
                }
                #expect(seen.map(Self.name) == ["blob 999999"] + expected.dropLast())
                #expect(seen.first?["body"] == .string("unsaved"))
                _ = try await session.close()
            }
            try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .http2) { client in
                guard case .objects(let objects, _) = try await client.fetch(bounded, in: "blobs") else {
                    Issue.record("a fetch of objects over HTTP/2 answered something else")
                    return
                }
                #expect(objects.map(Self.name) == expected)
            }
        }
    }

    /// A bounded fetch the store refuses fails as a streamed one does (the same code and
    /// message on both transports), and the connection goes on answering.
    @Test func aRefusedBoundedFetchFailsAsAStreamedOne() async throws {
        try await withTestStore(schema: Catalog.schema) { store in
            let unknown = FetchDescriptor(
                entityName: "Person", predicate: try PredicateParser.parse("nosuch == 1"), limit: 10)
            var errors: [DaemonTransport: ModelError] = [:]
            for transport in [DaemonTransport.framed, .http2] {
                errors[transport] = try await DaemonClient.withClient(
                    socketPath: store.socketPath, transport: transport
                ) {
                    client throws -> ModelError? in
                    let error = await #expect(throws: ModelError.self) {
                        _ = try await client.fetch(unknown, in: store.name)
                    }
                    let people = FetchDescriptor(entityName: "Person", limit: 10)
                    let answered = try await client.fetch(people, in: store.name)
                    #expect(answered.count == 0)
                    return error
                }
            }
            #expect(errors[.framed] != nil && errors[.framed]?.code == errors[.http2]?.code)
            #expect(errors[.framed]?.message == errors[.http2]?.message)
            #expect(errors[.framed]?.message.contains("nosuch") == true, "\(String(describing: errors[.framed]))")
        }
    }

    /// Bounded fetches cancelled while their query runs stop it: more of them than the store
    /// has readers, then a count answers well before any of them could have ended (each takes
    /// about 40 s uninterrupted on an idle machine).
    @Test func cancellingABoundedFetchInterruptsItsQuery() async throws {
        try await withTestStore(schema: Catalog.schema, daemon: .perTest) { store in
            try await SlowQuery.friends(store)
            let slow = FetchDescriptor(
                entityName: "Person", predicate: try PredicateParser.parse(SlowQuery.predicate), limit: 10)
            try await DaemonClient.withClient(socketPath: store.socketPath, transport: .framed) { client in
                for _ in 0..<6 {
                    let error = await errorOfCall(cancelledAfter: .milliseconds(300)) {
                        _ = try await client.fetch(slow, in: store.name)
                    }
                    #expect(error != nil, "the slow fetch was cancelled, not answered")
                }
                let clock = ContinuousClock(), start = clock.now
                let count = try await client.count(FetchDescriptor(entityName: "Person"), in: store.name)
                #expect(count == SlowQuery.people)
                #expect(clock.now - start < .seconds(20), "the count waited for the cancelled fetches")
            }
        }
    }

    private static func name(_ object: ObjectSnapshot) -> String {
        if case .string(let name) = object["name"] { name } else { "" }
    }
}
