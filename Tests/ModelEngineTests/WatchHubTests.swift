import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import StandardBackends
import Testing

/// How saves reach a hub: told by the process that made them (no read of history), or read
/// from history when a change feed hears of them or the hub is told out of order.
@Suite struct WatchHubTests {
    /// A hub that never polls: every read of history it makes is one a save asked for.
    static func quietHub(_ store: WatchedStore) -> WatchHub {
        let backend = store.container.backend
        return WatchHub(pollInterval: .seconds(3_600)) { after, limit in
            try await backend.history(after: after, limit: limit)
        }
    }

    @Test(arguments: WatchBackend.allCases)
    func toldSavesNeedNoHistoryAndOthersAreRead(_ kind: WatchBackend) async throws {
        try await withWatchedStore(kind) { store in
            let hub = Self.quietHub(store)
            defer { hub.close(with: ModelError(.notFound, "closed")) }
            let watch = try QueryWatch(.count(FetchDescriptor(entityName: "Trip")), on: store.container, hub: hub)
            #expect(try await nextUpdate(watch).result == .count(0))
            let context = store.container.makeContext()
            func insertTrip(_ n: Int) async throws -> SaveResult {
                _ = try await context.insert(
                    "Trip",
                    attributes: [
                        "name": .string("t\(n)"), "destination": .string("A"),
                        "startDate": .date(Timestamp(Date(timeIntervalSince1970: 0))),
                        "endDate": .date(Timestamp(Date(timeIntervalSince1970: 0))),
                    ])
                return try await context.save()
            }

            // Told saves: the watch hears each, and the hub reads no history for them (at most
            // the one read it makes when its first watch subscribes).
            let before = hub.historyReadCount
            for n in 1...10 {
                let saved = try await insertTrip(n)
                #expect(saved.touchedEntities == ["Trip"])
                hub.saved(saved.token, touching: saved.touchedEntities)
                let update = try await nextUpdate(watch)
                #expect(update.result == .count(n))
                #expect(update.token == saved.token)
            }
            #expect(
                hub.historyReadCount - before <= 1, "told saves read history \(hub.historyReadCount - before) times")

            // A save the hub is not told of, heard by a change feed: read from history.
            let heard = try #require(try await insertTrip(11).token)
            let reads = hub.historyReadCount
            hub.heard(heard)
            let update = try await nextUpdate(watch)
            #expect(update.result == .count(11))
            #expect(update.token == heard)
            #expect(hub.historyReadCount > reads)

            // Two saves told in the wrong order: the watch sees the later one's result.
            let first = try await insertTrip(12), second = try await insertTrip(13)
            hub.saved(second.token, touching: second.touchedEntities)
            hub.saved(first.token, touching: first.touchedEntities)
            var last = try await nextUpdate(watch)
            while last.token != second.token { last = try await nextUpdate(watch) }
            #expect(last.result == .count(13))
        }
    }
}
