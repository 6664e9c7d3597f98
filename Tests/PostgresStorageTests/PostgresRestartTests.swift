import Foundation
import ModelCore
import ModelFixtures
import PostgresStorage
import Testing

/// PostgreSQL restarting under load, on a cluster of the test's own: calls in the gap fail
/// UNAVAILABLE saying why, work resumes by itself once the server is back, and no
/// acknowledged save is lost.
@Suite struct PostgresRestartTests {
    /// What the workers saw, shared with the test.
    struct Outcomes {
        var acknowledged: [String] = []
        var unavailable: [String] = []
        var unexpected: [String] = []
        var resumed: Set<Int> = []
    }

    @Test(.timeLimit(.minutes(5))) func aRestartUnderLoadLosesNoAcknowledgedSave() async throws {
        try await PostgresCluster.with(restartUnderLoad)
    }

    private func restartUnderLoad(_ cluster: PostgresCluster) async throws {
        let store = try await PostgresStore.open(
            url: cluster.freshStoreURL("pool_size=2"), applying: SampleTrips.schema)
        let outcomes = Shared(Outcomes())
        let restarted = Shared(false), stopping = Shared(false)
        @Sendable func note(_ error: any Error) {
            outcomes.update { outcomes in
                if let error = error as? ModelError, error.code == .unavailable, error.message.contains("PostgreSQL") {
                    outcomes.unavailable.append(error.message)
                } else {
                    outcomes.unexpected.append("\(error)")
                }
            }
        }
        // Two workers save new trips, two count them.
        let workers = (0..<4).map { worker in
            Task {
                var count = 0
                while !stopping.value {
                    count += 1
                    let after = restarted.value
                    do {
                        if worker < 2 {
                            let name = "w\(worker)-\(count)"
                            _ = try await store.save(
                                ChangeSet(inserts: [
                                    InsertedObject(
                                        id: PostgresSaveTests.temporary(store, "Trip"),
                                        attributes: PostgresSaveTests.trip(name, "2026-06-01"))
                                ]))
                            outcomes.update { $0.acknowledged.append(name) }
                        } else {
                            _ = try await store.fetch(
                                FetchDescriptor(entityName: "Trip", resultType: .count), overlay: nil)
                        }
                        if after { outcomes.update { _ = $0.resumed.insert(worker) } }
                    } catch {
                        note(error)
                        // A worker that failed waits a moment, as a client retrying would.
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
        }
        try await waitUntil("20 saves before the restart") { outcomes.value.acknowledged.count >= 20 }
        try await cluster.restart()
        let back = ContinuousClock.now
        restarted.update { $0 = true }
        try await waitUntil("every worker succeeding after the restart") { outcomes.value.resumed.count == 4 }
        let resumedAfter = ContinuousClock.now - back
        // More work after the restart, then stop.
        let before = outcomes.value.acknowledged.count
        try await waitUntil("20 more saves") { outcomes.value.acknowledged.count >= before + 20 }
        stopping.update { $0 = true }
        for worker in workers { await worker.value }

        let seen = outcomes.value
        #expect(seen.unexpected.isEmpty, "errors other than UNAVAILABLE: \(seen.unexpected.prefix(3))")
        let stored = try await store.fetch(FetchDescriptor(entityName: "Trip"), overlay: nil).objects.compactMap {
            snapshot -> String? in
            if case .string(let name) = snapshot.attributes["name"] { return name }
            return nil
        }
        let missing = Set(seen.acknowledged).subtracting(stored)
        #expect(missing.isEmpty, "acknowledged saves lost: \(missing.sorted().prefix(5))")
        print(
            "PostgreSQL restart under load: \(seen.acknowledged.count) saves acknowledged, \(seen.unavailable.count) calls UNAVAILABLE in the gap (e.g. \(seen.unavailable.first ?? "-")), every worker working again \(resumedAfter) after the server was back"
        )
        await store.close()
    }

    /// Waits (checking every 10 ms, at most two minutes) until `condition` holds.
    private func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("waited two minutes for \(what)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
