@testable import FramedTransport
import Foundation
import GRPCCore
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import Testing

/// The blocking client (`BlockingDaemonClient`, over `BlockingFramedConnection`) against a real
/// daemon: the same answers and errors as `DaemonClient`'s, a timeout that cancels its call and
/// leaves the client usable, a limit on answers, and a connection the daemon closed replaced.
@Suite(.isolatedStore(schema: Catalog.schema))
struct BlockingClientTests {
    var store: TestStore { get throws { try #require(TestStore.current) } }

    private func items(_ store: TestStore, _ count: Int) async throws {
        let edits: [ObjectEdit] = (1...count).map { i in
            .insert(
                entity: "Item",
                attributes: ["title": .string(String(format: "item-%05d", i)), "rank": .int(Int64(i % 7))],
                relationships: [:], id: nil)
        }
        try await store.client.apply(edits, in: store.name)
    }

    /// Runs `body` on a thread of its own, as the client's users do (its calls block).
    private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { done in
            Thread { done.resume(with: Result { try body() }) }.start()
        }
    }

    @Test func answersAsTheAsyncClientAnswers() async throws {
        let store = try store
        try await items(store, 1_200)
        let ids = try await store.client.fetch(
            FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("title")], resultType: .identifiers),
            in: store.name
        ).identifiers
        let missing = PersistentIdentifier(
            storeIdentifier: store.info.storeIdentifier, entityName: "Item", key: .permanent(999_999))
        let asked = [ids[5], missing, ids[0], ids[1_199]]
        let descriptor = FetchDescriptor(
            entityName: "Item", predicate: where_("rank == 3"), sortBy: [SortDescriptor("title", ascending: false)])
        let expected = (
            status: try await store.client.status(), objects: try await store.client.objects(asked, in: store.name),
            fetched: try await store.client.fetch(descriptor, in: store.name),
            counted: try await store.client.count(descriptor, in: store.name)
        )
        let (socketPath, name) = (store.socketPath, store.name)
        let (status, objects, fetched, counted, saved, notFound, unknownEntity) = try await onThread {
            let client = try BlockingDaemonClient(socketPath: socketPath)
            defer { client.close() }
            let saved = try client.apply(
                [.insert(entity: "Item", attributes: ["title": .string("new")], relationships: [:], id: nil)], in: name,
                returnTransaction: true)
            var countOnly = descriptor
            countOnly.resultType = .count
            let notFound = Result { try client.objects(asked, in: "no-such-store") }
            let unknownEntity = Result { try client.fetch(FetchDescriptor(entityName: "Spaceship"), in: name) }
            return (
                try client.status(), try client.objects(asked, in: name), try client.fetch(descriptor, in: name),
                try client.fetch(countOnly, in: name), saved, notFound, unknownEntity
            )
        }
        #expect(status.processIdentifier == expected.status.processIdentifier)
        #expect(status.version == expected.status.version)
        #expect(objects == expected.objects && objects.count == 3)
        #expect(fetched == expected.fetched && fetched.objects.count == (1...1_200).filter { $0 % 7 == 3 }.count)
        #expect(counted == .count(expected.counted))
        let newID = try #require(saved.transaction?.changes.first?.id)
        #expect(saved.remappedIdentifiers.values.contains(newID))
        #expect(try await store.client.objects([newID], in: store.name).first?["title"] == .string("new"))
        let asyncNotFound = try #require(
            await expectError(.notFound) { _ = try await store.client.objects(asked, in: "no-such-store") })
        #expect(throws: asyncNotFound) { try notFound.get() }
        let asyncUnknown = try #require(
            await expectError(.unknownEntity) {
                _ = try await store.client.fetch(FetchDescriptor(entityName: "Spaceship"), in: store.name)
            })
        #expect(throws: asyncUnknown) { try unknownEntity.get() }
    }

    /// The client keeps the last answer's shapes for the next (as the async client does): reads
    /// one after another of objects of two entities, and of the same entity with different
    /// attributes set, each read alone, answer what the async client answers.
    @Test func readsOfOtherShapesOneAfterAnotherAnswerAsTheAsyncClient() async throws {
        let store = try store
        func temporary(_ entity: String) -> PersistentIdentifier {
            .temporary(storeIdentifier: store.info.storeIdentifier, entityName: entity)
        }
        let (plainID, fullID, shelfID) = (temporary("Item"), temporary("Item"), temporary("Shelf"))
        let saved = try await store.client.apply(
            [
                .insert(entity: "Shelf", attributes: ["name": .string("top")], relationships: [:], id: shelfID),
                .insert(entity: "Item", attributes: ["title": .string("plain")], relationships: [:], id: plainID),
                .insert(
                    entity: "Item",
                    attributes: [
                        "title": .string("full"), "sku": .string("S-1"), "price": .double(2.5),
                        "added": .date(Timestamp(microsecondsSince1970: 1_700_000_000_000_000)),
                    ], relationships: ["shelf": .toOne(shelfID)], id: fullID),
            ], in: store.name)
        let plain = try #require(saved.remappedIdentifiers[plainID])
        let full = try #require(saved.remappedIdentifiers[fullID])
        let shelf = try #require(saved.remappedIdentifiers[shelfID])
        let order = [plain, full, shelf, plain, shelf, full, full, plain]
        var expected: [[ObjectSnapshot]] = []
        for id in order { expected.append(try await store.client.objects([id], in: store.name)) }
        let (socketPath, name) = (store.socketPath, store.name)
        let read = try await onThread {
            let client = try BlockingDaemonClient(socketPath: socketPath)
            defer { client.close() }
            return try order.map { try client.objects([$0], in: name) }
        }
        #expect(read == expected)
        #expect(read.map { $0.first?.id } == order)
        // What each read says, checked on its own too (not only against the async client's).
        for (index, objects) in read.enumerated() {
            let object = try #require(objects.first)
            switch order[index] {
            case plain:
                #expect(object["title"] == .string("plain") && object["sku"] == .null && object["price"] == .null)
                #expect(object.toOne("shelf") == nil)
            case full:
                #expect(object["title"] == .string("full") && object["sku"] == .string("S-1"))
                #expect(object["price"] == .double(2.5))
                #expect(object["added"] == .date(Timestamp(microsecondsSince1970: 1_700_000_000_000_000)))
                #expect(object.toOne("shelf") == shelf)
            default:
                #expect(object["name"] == .string("top") && object["title"] == .null)
                #expect(object.toMany("items") == [full])
            }
        }
    }

    /// A call not answered within its timeout is cancelled and fails with `deadlineExceeded`;
    /// the late frames of its answer are skipped and the next calls are answered. An answer over
    /// the connection's limit fails with `resourceExhausted`, and the connection goes on too.
    @Test func timeoutsAndTheAnswerLimitLeaveTheConnectionUsable() async throws {
        let store = try store
        try await items(store, 20_000)
        let (socketPath, name) = (store.socketPath, store.name)
        let everything = FetchDescriptor(entityName: "Item")
        let outcomes = try await onThread { () -> [String] in
            let client = try BlockingDaemonClient(socketPath: socketPath, timeout: .milliseconds(1))
            var outcomes: [String] = []
            do {
                _ = try client.fetch(everything, in: name)
                outcomes.append("answered")
            } catch let error as ModelError {
                outcomes.append("\(error.code)")
            }
            client.timeout = nil
            outcomes.append("\(try client.fetch(everything, in: name).objects.count)")
            outcomes.append(try client.status().version.isEmpty ? "no version" : "status")

            let framed = try #require(DefaultLocations.framedSocketPath(for: socketPath))
            let connection = try BlockingFramedConnection(path: framed, maximumResponseSize: 50_000)
            let request: [UInt8] = try Modeld_V1_StoreFetchRequest.with {
                $0.store = name
                $0.fetch = everything.wire
            }.serializedBytes()
            do {
                _ = try connection.serverStreaming(Modeld_V1_QueryService.Method.Fetch.descriptor, request: request)
                outcomes.append("answered")
            } catch let error as RPCError {
                outcomes.append("\(error.code)")
            }
            let status = try connection.unary(
                Modeld_V1_DaemonService.Method.Status.descriptor,
                request: try Modeld_V1_StatusRequest().serializedBytes())
            outcomes.append(try Modeld_V1_StatusResponse(serializedBytes: status).version.isEmpty ? "empty" : "status")
            return outcomes
        }
        #expect(outcomes == ["deadlineExceeded", "20000", "status", "resourceExhausted", "status"])
    }

    /// A request or an answer larger than the 64 KiB a connection keeps between calls grows its
    /// buffers for that call only: afterwards it holds what it held before, and goes on answering.
    @Test func buffersGrownForALargeCallAreLetGoAfterIt() async throws {
        let store = try store
        try await items(store, 5_000)
        let (socketPath, name) = (store.socketPath, store.name)
        let (before, afterRequest, afterAnswer, answered, objects) = try await onThread {
            let framed = try #require(DefaultLocations.framedSocketPath(for: socketPath))
            let connection = try BlockingFramedConnection(path: framed)
            defer { connection.close() }
            let before = connection.heldBufferBytes
            // 256 KiB of bytes that are no request: read, and refused as such.
            let method = MethodDescriptor(fullyQualifiedService: "modeld.v1.QueryService", method: "Apply")
            #expect(throws: RPCError.self) {
                _ = try connection.unary(method, request: [UInt8](repeating: 0xff, count: 256 * 1024))
            }
            let afterRequest = connection.heldBufferBytes
            // Every object in one response (the batch size asked for): one frame larger than 64 KiB.
            let request: [UInt8] = try Modeld_V1_StoreFetchRequest.with {
                $0.store = name
                $0.fetch = FetchDescriptor(entityName: "Item").wire
                $0.fetch.batchSize = 5_000
            }.serializedBytes()
            let messages = try connection.serverStreaming(
                Modeld_V1_QueryService.Method.Fetch.descriptor, request: request)
            let objects = try messages.reduce(0) { $0 + (try FetchChunk(serialized: $1)).objects.count }
            let answered = messages.map(\.count).max() ?? 0
            let afterAnswer = connection.heldBufferBytes
            _ = try connection.unary(Modeld_V1_DaemonService.Method.Status.descriptor, request: [])
            return (before, afterRequest, afterAnswer, answered, objects)
        }
        #expect(objects == 5_000)
        #expect(answered > 65_536, "the largest response was \(answered) bytes: too small to grow the buffer")
        #expect(afterRequest == before, "\(before) bytes held before, \(afterRequest) after a 256 KiB request")
        #expect(afterAnswer == before, "\(before) bytes held before, \(afterAnswer) after a \(answered)-byte response")
    }

    /// After `close()`, calls fail with `unavailable`, saying so.
    @Test func callsAfterCloseAreRefused() async throws {
        let socketPath = try store.socketPath
        let outcome = try await onThread { () -> ModelError? in
            let client = try BlockingDaemonClient(socketPath: socketPath)
            _ = try client.status()
            client.close()
            do {
                _ = try client.status()
                return nil
            } catch let error as ModelError {
                return error
            }
        }
        #expect(outcome?.code == .unavailable)
        #expect(outcome?.message.contains("closed") == true, "\(String(describing: outcome))")
    }
}
