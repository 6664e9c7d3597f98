import Foundation
import ModelCore
import ModelFixtures
@testable import PostgresStorage
import Synchronization
import Testing

/// A PostgreSQL store's big fetches are read as they are sent (`fetchObjects`), through a cursor
/// on a connection of their own: the daemon holds a batch, not the whole result, and a consumer
/// that stops reading holds up no other read. (It read everything first, then handed it over.)
@Suite struct PostgresStreamTests {
    /// A store of `count` trips, with `parameters` added to its URL.
    static func store(trips count: Int, _ parameters: String = "") async throws -> PostgresStore {
        let store = try await PostgresStore.open(
            url: try PostgresServer.freshStoreURL() + parameters, applying: SampleTrips.schema)
        let inserts = (0..<count).map { index in
            InsertedObject(
                id: PostgresSaveTests.temporary(store, "Trip"),
                attributes: PostgresSaveTests.trip(String(format: "T%05d", index), "2026-05-01"))
        }
        _ = try await store.save(ChangeSet(inserts: inserts))
        return store
    }

    /// Every trip, by name.
    static func byName() throws -> FetchDescriptor {
        FetchDescriptor(entityName: "Trip", sortBy: [try SortDescriptor(parsing: "name")])
    }

    /// The name of each trip of `batch`.
    static func names(_ batch: [ObjectSnapshot]) -> [String] {
        batch.compactMap { if case .string(let name)? = $0.attributes["name"] { name } else { nil } }
    }

    /// What `store`'s connections are doing on the server: each one's state and statement.
    static func activity(of store: PostgresStore, through observer: PostgresStore) async throws -> [(String, String)] {
        let name = store.endpoint.applicationName
        return try await observer.writer.run { session in
            try session.query(
                "SELECT coalesce(state, ''), coalesce(query, '') FROM pg_stat_activity WHERE application_name = $1",
                [.string(name)]
            ).map { row in
                let cells = Array(row)
                return (try PostgresValues.text(cells[0]) ?? "", try PostgresValues.text(cells[1]) ?? "")
            }
        }
    }

    /// A stream of every trip started behind streams that hold every connection of `store`'s,
    /// once it waits for one.
    static func waitingStream(on store: PostgresStore) async throws -> Task<Int, any Error> {
        let (queued, queue) = AsyncStream<Void>.makeStream()
        store.streams.whenAStreamWaits { queue.yield() }
        let stream = Task { try await store.fetchObjects(try Self.byName(), batchSize: 50) { _, _ in } }
        for await _ in queued { break }
        return stream
    }

    /// A consumer that, at its first batch, says so and waits until released.
    final class Gate: Sendable {
        let (reached, reach) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        let passed = Mutex(false)

        func firstBatch() async {
            let first = passed.withLock { passed in
                let first = !passed
                passed = true
                return first
            }
            guard first else { return }
            reach.yield()
            for await _ in released { break }
        }

        func waitForFirstBatch() async { for await _ in reached { break } }
    }

    @Test(.timeLimit(.minutes(3))) func theRowsAreReadAsTheConsumerTakesThem() async throws {
        let store = try await Self.store(trips: 1_000)
        let observer = try await PostgresStore.open(url: try PostgresServer.freshStoreURL())
        let batchSizes = Mutex<[Int]>([])
        let names = Mutex<[String]>([])
        let seenMidway = Mutex<[(String, String)]>([])
        let count = try await store.fetchObjects(try Self.byName(), batchSize: 100) { batch, prefetched in
            #expect(!prefetched)
            if batchSizes.withLock({ $0.isEmpty }) {
                // Mid-way, the store's stream is a transaction with its cursor open, waiting for
                // this consumer: the rest of the rows are still on the server.
                let activity = try await Self.activity(of: store, through: observer)
                seenMidway.withLock { $0 = activity }
                #expect(store.streams.counts.running == 1)
            }
            batchSizes.withLock { $0.append(batch.count) }
            names.withLock { $0 += Self.names(batch) }
        }
        #expect(count == 1_000)
        #expect(batchSizes.withLock { $0 } == Array(repeating: 100, count: 10))
        #expect(names.withLock { $0 } == (0..<1_000).map { String(format: "T%05d", $0) })
        let midway = seenMidway.withLock { $0 }
        // (Its last statement: the cursor's FETCH, or the read of the batch's relationships.)
        #expect(
            midway.filter { $0.0 == "idle in transaction" }.count == 1, "the store's connections mid-way: \(midway)")
        // Once done, the transaction is over and the connection kept for the next stream.
        #expect(store.streams.counts == (running: 0, waiting: 0, idle: 1))
        #expect(try await Self.activity(of: store, through: observer).allSatisfy { $0.0 == "idle" })
        await store.close()
        await observer.close()
    }

    /// A consumer that stops reading holds its own connection only: reads go on through the
    /// pool, and a stream beyond the store's `pool_size` streams waits for a connection, then runs.
    @Test(.timeLimit(.minutes(3))) func aStalledStreamHoldsUpOnlyTheStreamsBeyondTheLimit() async throws {
        let store = try await Self.store(trips: 300, "&pool_size=1")
        let gate = Gate()
        let stalled = Task {
            try await store.fetchObjects(try Self.byName(), batchSize: 50) { _, _ in await gate.firstBatch() }
        }
        await gate.waitForFirstBatch()
        // The one reader answers while the stream waits for its consumer.
        #expect(
            try await store.fetch(FetchDescriptor(entityName: "Trip", resultType: .count), overlay: nil)
                == .count(300))
        let second = try await Self.waitingStream(on: store)
        let counts = store.streams.counts
        #expect(counts.running == 1 && counts.waiting == 1, "\(counts)")
        gate.release.yield()
        #expect(try await stalled.value == 300)
        #expect(try await second.value == 300)
        #expect(store.streams.counts == (running: 0, waiting: 0, idle: 1))
        await store.close()
    }

    /// A stream waiting for a connection whose caller gives up (its client went) stops waiting
    /// at once, failing `cancelled`; the streams after it are not held up by it.
    @Test(.timeLimit(.minutes(3))) func aWaitingStreamWhoseCallerGivesUpStopsWaiting() async throws {
        let store = try await Self.store(trips: 120, "&pool_size=1")
        let gate = Gate()
        let stalled = Task {
            try await store.fetchObjects(try Self.byName(), batchSize: 50) { _, _ in await gate.firstBatch() }
        }
        await gate.waitForFirstBatch()
        let waiting = try await Self.waitingStream(on: store)
        let counts = store.streams.counts
        #expect(counts.waiting == 1, "\(counts)")
        waiting.cancel()
        let outcome = await waiting.result
        guard case .failure(let error as ModelError) = outcome else {
            Issue.record("the cancelled waiting stream gave \(outcome)")
            return
        }
        #expect(error.code == .cancelled, "\(error)")
        #expect(store.streams.counts.waiting == 0 && store.streams.counts.running == 1)
        gate.release.yield()
        #expect(try await stalled.value == 120)
        #expect(try await store.fetchObjects(try Self.byName(), batchSize: 50) { _, _ in } == 120)
        await store.close()
    }

    /// The store closing under a stream ends it `closed`, saying so, and leaves nothing of it on
    /// the server.
    @Test(.timeLimit(.minutes(3))) func closingTheStoreEndsAStream() async throws {
        let store = try await Self.store(trips: 300)
        let observer = try await PostgresStore.open(url: try PostgresServer.freshStoreURL())
        let gate = Gate()
        let stream = Task {
            try await store.fetchObjects(try Self.byName(), batchSize: 50) { _, _ in await gate.firstBatch() }
        }
        await gate.waitForFirstBatch()
        await store.close()
        gate.release.yield()
        let outcome = await stream.result
        guard case .failure(let error as ModelError) = outcome else {
            Issue.record("the stream under the closing store gave \(outcome)")
            return
        }
        #expect(error.code == .closed && error.message.contains("closed while this fetch streamed"), "\(error)")
        // Its connections closed (the server counts one until its backend has gone, just after
        // the close; on a loaded machine, seconds after it).
        var left = try await PostgresPoolTests.connections(of: store, through: observer)
        let deadline = ContinuousClock.now + .seconds(60)
        while left > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            left = try await PostgresPoolTests.connections(of: store, through: observer)
        }
        #expect(left == 0)
        await observer.close()
    }

    /// A stream's kept connection that the server ended since is replaced before anything is
    /// read: the next stream works as if nothing happened.
    @Test(.timeLimit(.minutes(3))) func aKeptConnectionTheServerEndedIsReplaced() async throws {
        let store = try await Self.store(trips: 120)
        let holder = try await PostgresStore.open(url: try PostgresServer.freshStoreURL())
        #expect(try await store.fetchObjects(try Self.byName(), batchSize: 50) { _, _ in } == 120)
        #expect(store.streams.counts.idle == 1)
        // Every idle connection of the store's: the stream's kept one among them.
        #expect(try await PostgresAsyncReadTests.terminate(store, state: "idle", through: holder) >= 1)
        let sizes = Mutex<[Int]>([])
        let count = try await store.fetchObjects(try Self.byName(), batchSize: 50) { batch, _ in
            sizes.withLock { $0.append(batch.count) }
        }
        #expect(count == 120)
        #expect(sizes.withLock { $0 } == [50, 50, 20])
        await store.close()
        await holder.close()
    }
}
