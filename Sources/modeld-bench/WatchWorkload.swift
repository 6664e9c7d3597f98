import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting

/// Watches held open for a workload: `count` watches of `query`, each begun (its first result in).
final class OpenWatches: Sendable {
    private let task: Task<Void, Never>

    private init(task: Task<Void, Never>) { self.task = task }

    static func open(
        _ count: Int, _ query: WatchedQuery, store: String, socketPath: String, perClient: Int = 100
    ) async throws -> OpenWatches {
        let (begun, started) = AsyncStream<Void>.makeStream()
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for first in stride(from: 0, to: count, by: perClient) {
                    group.addTask {
                        try? await DaemonClient.withClient(socketPath: socketPath) { client in
                            await withTaskGroup(of: Void.self) { watches in
                                for _ in first..<min(first + perClient, count) {
                                    watches.addTask {
                                        // No saves are made while they open: one update each.
                                        try? await client.watch(query, in: store) { _ in started.yield() }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        var seen = 0
        for await _ in begun {
            seen += 1
            if seen == count { break }
        }
        return OpenWatches(task: task)
    }

    func close() async {
        task.cancel()
        await task.value
    }
}

extension BenchCommand {
    /// 13: live queries. The latency from a save's answer to a watcher's message; the daemon's
    /// CPU per save with 1,000 watches open that the saves do not match, against none (rounds
    /// alternated; target at most 1.2x), and with 100 that they do; memory per idle watch.
    func watchWorkload(daemon: any BenchDaemon, report: inout Report) async throws {
        say("13. live queries: save-to-watcher latency, CPU per save beside 1,000 unmatched and 100 matched watches")
        let store = "watch-bench", socketPath = daemon.socketPath, pid = daemon.processIdentifier
        _ = try await DaemonClient.withClient(socketPath: socketPath) {
            try await $0.createStore(store, schema: Catalog.schema)
        }
        let items = WatchedQuery.count(FetchDescriptor(entityName: "Item"))
        let people = WatchedQuery.count(FetchDescriptor(entityName: "Person"))
        var serial = 0
        func insert(_ client: DaemonClient) async throws {
            serial += 1
            try await client.apply(
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("item \(serial)")], relationships: [:], id: nil)
                ],
                in: store)
        }

        // Latency: one watcher, one saver; each save waits for the watcher's message.
        var latencies = Latencies()
        try await DaemonClient.withClient(socketPath: socketPath) { saver in
            try await DaemonClient.withClient(socketPath: socketPath) { watcher in
                let (arrivals, arrived) = AsyncStream<ContinuousClock.Instant>.makeStream()
                let watching = Task {
                    try? await watcher.watch(items, in: store) { _ in arrived.yield(.now) }
                }
                defer { watching.cancel() }
                var iterator = arrivals.makeAsyncIterator()
                _ = await iterator.next()
                for n in 0..<(200 * rounds) {
                    try await insert(saver)
                    let answered = ContinuousClock.now
                    guard let heard = await iterator.next() else { break }
                    if n >= 20 { latencies.record(heard - answered) }
                }
            }
        }
        report.detail("13 save to watcher", latencies.summary)
        report.add(
            "13 save to watcher message", modeld: "p50 \(micros(latencies.percentile(50)))",
            baseline: "p99 \(micros(latencies.percentile(99)))",
            ratio: latencies.percentile(99) / latencies.percentile(50), target: "(reported; ratio p99/p50)", met: nil)
        say(
            "   save answered → watcher's message: p50 \(micros(latencies.percentile(50))), p99 \(micros(latencies.percentile(99)))"
        )

        // CPU per save: none, 1,000 unmatched watches, alternated; then 100 matched ones.
        func cpuPerSave(_ saves: Int) async throws -> Double {
            try await DaemonClient.withClient(socketPath: socketPath) { client in
                try await insert(client)
                let before = ProcessStats.of(pid)
                for _ in 0..<saves { try await insert(client) }
                return (ProcessStats.of(pid).cpuSeconds - before.cpuSeconds) / Double(saves) * 1e6
            }
        }
        var alone: [Double] = [], unmatched: [Double] = []
        let memoryBefore = ProcessStats.of(pid).residentKB
        let open = try await OpenWatches.open(1_000, people, store: store, socketPath: socketPath)
        let memoryPerWatch = Double(ProcessStats.of(pid).residentKB - memoryBefore) * 1024 / 1_000
        await open.close()
        for round in 0..<rounds {
            alone.append(try await cpuPerSave(500))
            let watches = try await OpenWatches.open(1_000, people, store: store, socketPath: socketPath)
            unmatched.append(try await cpuPerSave(500))
            await watches.close()
            say(
                "   round \(round + 1): CPU per save \(micros(alone.last!)) alone, \(micros(unmatched.last!)) beside 1,000 unmatched watches"
            )
        }
        let matchedWatches = try await OpenWatches.open(100, items, store: store, socketPath: socketPath)
        let matched = try await cpuPerSave(200)
        await matchedWatches.close()
        let ratio = median(unmatched) / median(alone)
        report.detail(
            "13 CPU per save",
            [
                "alone_us": median(alone), "unmatched_1000_us": median(unmatched), "matched_100_us": matched,
                "memory_per_idle_watch_bytes": memoryPerWatch,
            ])
        report.add(
            "13 CPU per save, 1,000 unmatched watches", modeld: micros(median(unmatched)),
            baseline: micros(median(alone)) + " no watches", ratio: ratio, target: "<= 1.2x", met: ratio <= 1.2)
        report.add(
            "13 CPU per save, 100 matched watches", modeld: micros(matched),
            baseline: micros(median(alone)) + " no watches",
            ratio: matched / median(alone), target: "(reported)", met: nil)
        say(
            "   CPU per save: \(micros(median(alone))) alone, \(micros(median(unmatched))) beside 1,000 unmatched watches (\(format(ratio))x), \(micros(matched)) beside 100 matched; memory per idle watch \(format(memoryPerWatch)) bytes"
        )
        _ = try await DaemonClient.withClient(socketPath: socketPath) { try await $0.dropStore(store, force: true) }
    }
}
