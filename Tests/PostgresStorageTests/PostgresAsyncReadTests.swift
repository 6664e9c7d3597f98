import Foundation
import ModelCore
import ModelFixtures
@testable import PostgresStorage
import Testing

/// Reads whose statements are sent from the calling task (`runAsync`, which point reads and
/// one-statement fetches take) meet a connection the server ends as the blocking reads do: the
/// read under way fails UNAVAILABLE saying why, and the next read works on a new connection.
@Suite struct PostgresAsyncReadTests {
    /// Ends `store`'s reader connections in `state` ('active' or 'idle'), through `holder`'s;
    /// returns how many.
    static func terminate(_ store: PostgresStore, state: String, through holder: PostgresStore) async throws -> Int {
        let name = store.endpoint.applicationName
        return try await holder.writer.run { session in
            try session.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND state = $2",
                [.string(name), .string(state)]
            ).count
        }
    }

    @Test(.timeLimit(.minutes(3))) func aReadWhoseConnectionEndsFailsUnavailableAndTheNextWorks() async throws {
        // A pool of one, not yet opened: the stuck read opens the connection, so it is not run again.
        let store = try await PostgresStore.open(
            url: try PostgresServer.freshStoreURL() + "&pool_size=1", applying: SampleTrips.schema)
        let holder = try await PostgresStore.open(url: try PostgresServer.freshStoreURL())
        try await holder.writer.run { try $0.query("SELECT pg_advisory_lock(7, 7)") }
        let stuck = Task {
            try await store.readers.runAsync { session in
                try await session.query("SELECT pg_advisory_lock_shared(7, 7)").count
            }
        }
        let waiting = try await PostgresPoolTests.connectionsWaitingOnALock(of: store, through: holder)
        #expect(waiting == 1, "the stuck read never reached its lock")
        #expect(try await Self.terminate(store, state: "active", through: holder) == 1)

        let outcome = await stuck.result
        guard case .failure(let error as ModelError) = outcome else {
            Issue.record("the read whose connection ended gave \(outcome)")
            return
        }
        #expect(error.code == .unavailable && error.message.contains("PostgreSQL"), "\(error)")

        // The pool's one connection is replaced: reads, by URI and by fetch, answer.
        let saved = try await store.save(
            ChangeSet(inserts: [
                InsertedObject(
                    id: PostgresSaveTests.temporary(store, "Trip"),
                    attributes: PostgresSaveTests.trip("Oslo", "2026-05-01"))
            ]))
        let id = try #require(saved.remappedIdentifiers.values.first)
        #expect(try await store.snapshots(for: [id]).map(\.attributes["name"]) == [.string("Oslo")])
        #expect(
            try await store.fetch(FetchDescriptor(entityName: "Trip", resultType: .count), overlay: nil) == .count(1))

        // The idle connections ended too (the reader's and the writer's, which share a name): the
        // next read still answers (on a new one, at once or after its statement found the old
        // one cut).
        #expect(try await Self.terminate(store, state: "idle", through: holder) == 2)
        #expect(try await store.snapshots(for: [id]).map(\.attributes["name"]) == [.string("Oslo")])
        try await holder.writer.run { try $0.query("SELECT pg_advisory_unlock(7, 7)") }
        await store.close()
        await holder.close()
    }
}
