import Foundation
import GRPCCore
import ModelCore
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// What the daemon's watches hold is capped (`modeld --max-watch-memory`): a watch whose result
/// does not fit ends with RESOURCE_EXHAUSTED saying so, and one more watch past the cap is
/// refused, while the watches, reads and saves already under way go on; what a watch held is
/// given back when it ends.
@Suite struct WatchMemoryTests {
    static let megabyte = 1_048_576

    /// A watch of every `Blob` (50 KB each, from ``StalledClients/makeStore``), kept open by a
    /// task until it is cancelled: its first update is awaited, and how it ended is kept.
    final class OpenWatch: Sendable {
        let task: Task<ModelError?, Never>
        private let firstArrived: AsyncStream<Int>

        init(_ client: DaemonClient, _ query: WatchedQuery) {
            let (arrived, arrive) = AsyncStream<Int>.makeStream()
            firstArrived = arrived
            task = Task {
                defer { arrive.finish() }
                do {
                    try await client.watch(query, in: "big") { update in
                        if case .objects(let objects) = update.result { arrive.yield(objects.count) }
                        if case .count(let count) = update.result { arrive.yield(count) }
                    }
                    return nil
                } catch let error as ModelError {
                    return error
                } catch {
                    return ModelError(.storageFailure, "not a ModelError: \(error)")
                }
            }
        }

        /// The size of the first result (objects or count), or nil when the watch ended first.
        func first() async -> Int? {
            for await size in firstArrived { return size }
            return nil
        }
    }

    static let everyBlob = WatchedQuery.fetch(FetchDescriptor(entityName: "Blob", sortBy: [SortDescriptor("name")]))

    /// Waits until the daemon's status satisfies `condition`, asking again after each answer.
    static func status(
        _ client: DaemonClient, until condition: (DaemonStatus) -> Bool
    ) async throws -> DaemonStatus {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let status = try await client.status()
            if condition(status) || ContinuousClock.now > deadline { return status }
            await Task.yield()
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aWatchPastTheCapEndsAndTheOthersGoOn() async throws {
        try await StalledClients.withDaemon(arguments: ["--max-watch-memory", "1M"]) { daemon in
            // 12 objects of 50 KB: a result of about 600 KB, so one fits under 1 MiB and two do not.
            try await StalledClients.makeStore("big", on: daemon, rows: 12, bytes: 50_000)
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let first = OpenWatch(client, Self.everyBlob)
                #expect(await first.first() == 12)
                let holding = try await client.status()
                #expect(holding.maximumWatchMemoryBytes == Self.megabyte)
                #expect(holding.watchMemoryBytes > 600_000 && holding.watchMemoryBytes < Self.megabyte)
                let gauge = try await client.metrics().split(separator: "\n")
                    .first { $0.hasPrefix("modeld_watch_memory_bytes ") }
                let gauged = try #require(gauge.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) })
                #expect(gauged > 600_000 && gauged < Double(Self.megabyte), "\(gauge ?? "no gauge")")

                let second = OpenWatch(client, Self.everyBlob)
                #expect(await second.first() == nil)
                let refusal = try #require(await second.task.value)
                #expect(refusal.code == .resourceExhausted)
                #expect(refusal.message.contains("--max-watch-memory 1 MiB"), "\(refusal.message)")
                #expect(refusal.message.contains("end watches no longer needed"), "\(refusal.message)")

                // What fits still opens, and reads and saves go on beside the full budget.
                let small = OpenWatch(client, .count(FetchDescriptor(entityName: "Blob")))
                #expect(await small.first() == 12)
                #expect(try await client.fetch(FetchDescriptor(entityName: "Blob"), in: "big").count == 12)

                // The first watch's result grows past the cap: it ends, and gives back what it held.
                try await client.apply(
                    (0..<10).map { n in
                        .insert(
                            entity: "Blob",
                            attributes: [
                                "name": .string("more \(n)"), "body": .string(String(repeating: "c", count: 50_000)),
                            ],
                            relationships: [:], id: nil)
                    },
                    in: "big")
                let grown = try #require(await first.task.value)
                #expect(grown.code == .resourceExhausted)
                #expect(grown.message.contains("this watch's result needs"), "\(grown.message)")
                #expect(await small.first() == 22)

                let released = try await Self.status(client) { $0.watchMemoryBytes < 100_000 }
                #expect(released.watchMemoryBytes < 100_000, "watches still hold \(released.watchMemoryBytes) bytes")
                #expect(released.openWatches == 1)
                small.task.cancel()
                _ = await small.task.value
                let none = try await Self.status(client) { $0.openWatches == 0 && $0.watchMemoryBytes == 0 }
                #expect(none.openWatches == 0)
                #expect(none.watchMemoryBytes == 0)
            }
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func watchesAreCountedAgainstTheCapToo() async throws {
        try await StalledClients.withDaemon(arguments: ["--max-watch-memory", "1M"]) { daemon in
            try await StalledClients.makeStore("big", on: daemon, rows: 1, bytes: 10)
            // Each watch holds 2 KiB and a few bytes of count: at most 508 fit in 1 MiB.
            // Six clients of 100 watches each (a connection's most calls at once) ask for 600.
            let count = WatchedQuery.count(FetchDescriptor(entityName: "Blob"))
            let clients = try (0..<6).map { _ in try DaemonClient.connect(socketPath: daemon.socketPath) }
            defer { for client in clients { client.close() } }
            let watches = (0..<600).map { OpenWatch(clients[$0 % 6], count) }
            var opened = 0
            for watch in watches {
                if await watch.first() == 1 { opened += 1 }
            }
            #expect(opened >= 400 && opened < 520, "\(opened) watches opened")
            for watch in watches { watch.task.cancel() }
            var refused = 0
            for watch in watches {
                if let error = await watch.task.value, error.code == .resourceExhausted {
                    #expect(error.message.contains("--max-watch-memory 1 MiB"), "\(error.message)")
                    refused += 1
                }
            }
            #expect(refused == 600 - opened)
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let none = try await Self.status(client) { $0.openWatches == 0 && $0.watchMemoryBytes == 0 }
                #expect(none.watchMemoryBytes == 0)
            }
        }
    }
}
