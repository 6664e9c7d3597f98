import Foundation
import ModelCore
import ModelFixtures
@testable import PostgresStorage
import Testing

/// A store reads through a pool of connections (`pool_size`) and saves through one of its own:
/// a read stuck on the server holds up neither saves nor other reads, and a burst of reads opens
/// no more connections than the pool allows.
@Suite struct PostgresPoolTests {
    /// How many connections of `store` the server has, counted through `observer`'s.
    static func connections(of store: PostgresStore, through observer: PostgresStore, waitingOnALock: Bool = false)
        async throws -> Int
    {
        let name = store.endpoint.applicationName
        return try await observer.writer.run { session in
            try session.query(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1\(waitingOnALock ? " AND wait_event_type = 'Lock'" : "")",
                [.string(name)]
            ).first.flatMap { try $0.first.flatMap(PostgresValues.int) }.map(Int.init) ?? 0
        }
    }

    /// The connections of `store` waiting on a lock, once there is one (or after 30 s): a
    /// statement's waiting shows only in the server's `pg_stat_activity`, so it is polled.
    static func connectionsWaitingOnALock(of store: PostgresStore, through observer: PostgresStore)
        async throws -> Int
    {
        var waiting = 0
        for _ in 0..<1500 where waiting == 0 {
            waiting = try await connections(of: store, through: observer, waitingOnALock: true)
            if waiting == 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        return waiting
    }

    @Test(.timeLimit(.minutes(3))) func aStuckReadHoldsUpNeitherSavesNorOtherReads() async throws {
        let store = try await PostgresStore.open(
            url: try PostgresServer.freshStoreURL() + "&pool_size=2", applying: SampleTrips.schema)
        let holder = try await PostgresStore.open(url: try PostgresServer.freshStoreURL())
        // The holder takes a lock (of a key space the stores' own locks don't use) that the
        // stuck read then waits for.
        try await holder.writer.run { try $0.query("SELECT pg_advisory_lock(7, 7)") }
        let finished = Shared(false)
        let stuck = Task {
            let answer = try await store.readers.run { session in
                try session.query("SELECT pg_advisory_lock_shared(7, 7)")
                try session.query("SELECT pg_advisory_unlock_shared(7, 7)")
                return true
            }
            finished.update { $0 = true }
            return answer
        }
        let waiting = try await Self.connectionsWaitingOnALock(of: store, through: holder)
        #expect(waiting == 1, "the stuck read never reached its lock")

        let saved = try await store.save(
            ChangeSet(inserts: [
                InsertedObject(
                    id: PostgresSaveTests.temporary(store, "Trip"),
                    attributes: PostgresSaveTests.trip("Oslo", "2026-05-01"))
            ]))
        #expect(saved.token != nil)
        let reads = try await withThrowingTaskGroup(of: FetchResult.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await store.fetch(FetchDescriptor(entityName: "Trip", resultType: .count), overlay: nil)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reads == Array(repeating: .count(1), count: 8), "reads beside the stuck one see the save")
        #expect(!finished.value, "the stuck read is still waiting for its lock")

        try await holder.writer.run { try $0.query("SELECT pg_advisory_unlock(7, 7)") }
        #expect(try await stuck.value)
        await store.close()
        await holder.close()
    }

    @Test(.timeLimit(.minutes(3))) func aBurstOfReadsOpensNoMoreConnectionsThanThePool() async throws {
        let store = try await PostgresStore.open(
            url: try PostgresServer.freshStoreURL() + "&pool_size=3", applying: SampleTrips.schema)
        let observer = try await PostgresStore.open(url: try PostgresServer.freshStoreURL())
        let names = (0..<5).map { "trip \($0)" }
        _ = try await store.save(
            ChangeSet(
                inserts: names.map {
                    InsertedObject(
                        id: PostgresSaveTests.temporary(store, "Trip"),
                        attributes: PostgresSaveTests.trip($0, "2026-05-01"))
                }))
        let sorted = FetchDescriptor(entityName: "Trip", sortBy: [SortDescriptor("name")])
        let answers = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try await store.fetch(sorted, overlay: nil).objects.compactMap { snapshot -> String? in
                        if case .string(let name) = snapshot.attributes["name"] { return name }
                        return nil
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == Array(repeating: names, count: 40))
        let open = try await Self.connections(of: store, through: observer)
        // One for saves (opened with the store) and at most three for reads.
        #expect((2...4).contains(open), "\(open) connections")
        await store.close()
        // The server counts a connection until its backend has gone, just after the close (on a
        // loaded machine, seconds after it: once, more than 10).
        var left = open
        let deadline = ContinuousClock.now + .seconds(60)
        while left > 0, ContinuousClock.now < deadline {
            left = try await Self.connections(of: store, through: observer)
            if left > 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(left == 0, "closing the store closes its connections")
        await observer.close()
    }
}
