import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import SwiftProtobuf

extension BenchCommand {
    /// 10: point reads, counts and saves from one client beside 20 clients that each ask for a
    /// fetch of every row and stop reading (10 on each socket), against the same calls with none,
    /// alternated round by round. The target: each kind's p99 within 2x of the unloaded daemon's.
    func stallWorkload(_ workloads: ModeldWorkloads, daemon: any BenchDaemon, report: inout Report) async throws {
        say(
            "10. reads, counts and saves beside 20 stalled fetches of every row (10 per socket), against none (\(rounds) alternated rounds)"
        )
        let saves = "stall-saves"
        _ = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
            try await $0.createStore(saves, schema: try Dataset.schema())
        }
        var quiet = MixedLatencies(), beside = MixedLatencies()
        try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
            _ = try await workloads.mixedCalls(50, rows: rows, client: client, saves: saves, from: 0)
            for round in 0..<rounds {
                quiet.append(
                    try await workloads.mixedCalls(
                        300, rows: rows, client: client, saves: saves, from: (round * 2 + 1) * 1_000))
                let stalled = try await StalledFetches.open(
                    socketPath: daemon.socketPath, store: workloads.store, perSocket: 10)
                beside.append(
                    try await workloads.mixedCalls(
                        300, rows: rows, client: client, saves: saves, from: (round * 2 + 2) * 1_000))
                stalled.close()
                say(
                    "   round \(round + 1): p99 read \(micros(beside.reads.percentile(99))) beside the stalls, \(micros(quiet.reads.percentile(99))) without"
                )
            }
        }
        _ = try await DaemonClient.withClient(socketPath: daemon.socketPath) { try await $0.dropStore(saves) }
        var worst = 0.0
        for (name, with, without) in [
            ("read", beside.reads, quiet.reads), ("count", beside.counts, quiet.counts),
            ("save", beside.saves, quiet.saves),
        ] {
            let ratio = with.percentile(99) / without.percentile(99)
            worst = max(worst, ratio)
            report.detail("10 \(name) beside stalled fetches", with.summary)
            report.detail("10 \(name) unloaded", without.summary)
            say(
                "   \(name): p99 \(micros(with.percentile(99))) beside the stalls, \(micros(without.percentile(99))) without (\(format(ratio))x)"
            )
        }
        report.add(
            "10 calls beside 20 stalled fetches", modeld: "p99 read \(micros(beside.reads.percentile(99)))",
            baseline: "p99 read \(micros(quiet.reads.percentile(99))) unloaded", ratio: worst,
            target: "<= 2.0x (worst kind)",
            met: worst <= 2.0)
    }
}

/// The latencies of each kind of call in ``ModeldWorkloads/mixedCalls(_:rows:client:saves:from:)``.
struct MixedLatencies {
    var reads = Latencies(), counts = Latencies(), saves = Latencies()

    mutating func append(_ other: MixedLatencies) {
        reads.append(contentsOf: other.reads)
        counts.append(contentsOf: other.counts)
        saves.append(contentsOf: other.saves)
    }
}

extension ModeldWorkloads {
    /// `count` rounds of a point read, a count over an indexed range, and a save of one object
    /// into `saves` (objects `from` on), each timed.
    func mixedCalls(_ count: Int, rows: Int, client: DaemonClient, saves: String, from first: Int) async throws
        -> MixedLatencies
    {
        try await withTaskExecutorPreference(client.preferredExecutor) {
            var picker = RowPicker(rows: rows, seed: UInt64(first + 11))
            var latencies = MixedLatencies()
            let clock = ContinuousClock()
            for n in 0..<count {
                var start = clock.now
                guard try await client.objects([id(picker.next())], in: store).count == 1 else {
                    throw BenchError("a point read found nothing")
                }
                latencies.reads.record(clock.now - start)
                let low = Int64(Dataset.queryBound(n))
                let range = try PredicateParser.parse("score >= \(low) AND score < \(low + 100)")
                start = clock.now
                _ = try await client.count(FetchDescriptor(entityName: "Item", predicate: range), in: store)
                latencies.counts.record(clock.now - start)
                start = clock.now
                try await client.apply([Dataset.insert(first + n + 1)], in: saves)
                latencies.saves.record(clock.now - start)
            }
            return latencies
        }
    }
}

/// Clients that each ask for a fetch of every row of a store and stop reading once the first
/// bytes of the answer came: half on the framed socket, half over HTTP/2, on raw sockets.
struct StalledFetches {
    let sockets: [RawSocket]

    static func open(socketPath: String, store: String, perSocket: Int) async throws -> StalledFetches {
        let request: [UInt8] = try Modeld_V1_StoreFetchRequest.with {
            $0.store = store
            $0.fetch.entity = "Item"
            $0.fetch.batchSize = 10_000
        }.serializedBytes()
        var sockets: [RawSocket] = []
        for _ in 0..<perSocket {
            let framed = try RawSocket.connect(socketPath + ".frames")
            try framed.send(FramedBytes.call(stream: 1, path: "modeld.v1.QueryService/Fetch", request: request))
            let http2 = try RawSocket.connect(socketPath)
            try http2.send(HTTP2Bytes.call(path: "/modeld.v1.QueryService/Fetch", message: request, endsStream: true))
            sockets += [framed, http2]
        }
        for socket in sockets {
            // The answer has begun (beyond the HTTP/2 server's SETTINGS): the stream is under way.
            guard case .bytes = await socket.read(exactly: 4_096, timeout: .seconds(60)) else {
                for socket in sockets { socket.close() }
                throw BenchError("a stalled fetch got no answer")
            }
        }
        return StalledFetches(sockets: sockets)
    }

    func close() {
        for socket in sockets { socket.close() }
    }
}
