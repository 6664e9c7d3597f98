import Foundation
import ModelCore
import ModelRemote
import Synchronization

/// Point reads through modeld's blocking client (`BlockingDaemonClient`): each connection on a
/// thread of its own, its calls blocking that thread, as pgbench's libpq connections are.
extension ModeldWorkloads {
    /// Untimed reads before ``blockingPointReads(seconds:rows:seed:)`` times its own.
    static let blockingWarmUpReads = 200

    /// Point reads from one blocking connection on a thread of its own for `seconds`, after
    /// ``blockingWarmUpReads`` untimed: reads per second, and their latencies. Timed as pgbench's run is, for as
    /// long: a run of a few thousand reads (50 ms) measured wherever the scheduler had just put
    /// the new thread, before it settled (see docs/performance.md).
    func blockingPointReads(seconds: Double, rows: Int, seed: UInt64) async throws -> (rate: Double, Latencies) {
        let reading = Reading(socketPath: socketPath, store: store, storeIdentifier: storeIdentifier, rows: rows)
        return try await Self.onThread {
            let client = try BlockingDaemonClient(socketPath: reading.socketPath)
            defer { client.close() }
            _ = try reading.reads(client, count: Self.blockingWarmUpReads, seed: seed &+ 1)
            let began = ContinuousClock.now
            let latencies = try reading.reads(client, until: began + .seconds(seconds), seed: seed)
            return (Double(latencies.count) / (ContinuousClock.now - began).seconds, latencies)
        }
    }

    /// Point reads from `clients` blocking connections, a thread each, for `seconds`: reads per
    /// second over all of them, and their latencies.
    func concurrentBlockingPointReads(clients: Int, seconds: Double, rows: Int) async throws -> (
        rate: Double, Latencies
    ) {
        let reading = Reading(socketPath: socketPath, store: store, storeIdentifier: storeIdentifier, rows: rows)
        // Each thread connects and warms up, then waits for the others: the clock starts when
        // all are ready.
        let ready = Barrier(parties: clients + 1)
        let runs = (0..<clients).map { index in
            Task {
                try await Self.onThread { () -> Latencies in
                    let client = try BlockingDaemonClient(socketPath: reading.socketPath)
                    defer { client.close() }
                    _ = try reading.reads(client, count: 20, seed: 7)
                    return try reading.reads(
                        client, until: ready.arrive() + .seconds(seconds), seed: UInt64(index + 1) * 7_777)
                }
            }
        }
        let began = try await Self.onThread { ready.arrive() }
        var all = Latencies()
        for run in runs { all.append(contentsOf: try await run.value) }
        return (Double(all.count) / (ContinuousClock.now - began).seconds, all)
    }

    /// What a thread's reads need: where, and which rows.
    private struct Reading: Sendable {
        let socketPath: String
        let store: String
        let storeIdentifier: UUID
        let rows: Int

        /// Point reads of random rows, 50 at a time, until `deadline`; each 50 from the next seed.
        func reads(_ client: BlockingDaemonClient, until deadline: ContinuousClock.Instant, seed: UInt64) throws
            -> Latencies
        {
            var latencies = Latencies(), seed = seed
            while ContinuousClock.now < deadline {
                latencies.append(contentsOf: try reads(client, count: 50, seed: seed))
                seed &+= 1
            }
            return latencies
        }

        /// `count` point reads of random rows, one after another.
        func reads(_ client: BlockingDaemonClient, count: Int, seed: UInt64) throws -> Latencies {
            var picker = RowPicker(rows: rows, seed: seed)
            var latencies = Latencies()
            let clock = ContinuousClock()
            for _ in 0..<count {
                let identifier = PersistentIdentifier(
                    storeIdentifier: storeIdentifier, entityName: "Item", key: .permanent(Int64(picker.next())))
                let start = clock.now
                let objects = try client.objects([identifier], in: store)
                latencies.record(clock.now - start)
                guard objects.count == 1 else {
                    throw BenchError("modeld read of \(identifier) returned \(objects.count) objects")
                }
            }
            return latencies
        }
    }

    /// Runs `body` on a new thread; its result.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { done in
            let thread = Thread {
                let result = Result { try body() }
                ProcessStats.recordEndingThread()
                done.resume(with: result)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}

/// Threads waiting for one another: each `arrive()` blocks until `parties` have arrived, and
/// returns when the last did.
final class Barrier: Sendable {
    private let parties: Int
    private let state = Mutex((arrived: 0, releasedAt: ContinuousClock.Instant?.none))
    private let condition = NSCondition()

    init(parties: Int) {
        self.parties = parties
    }

    @discardableResult
    func arrive() -> ContinuousClock.Instant {
        condition.lock()
        defer { condition.unlock() }
        let released = state.withLock { state in
            state.arrived += 1
            if state.arrived == parties { state.releasedAt = ContinuousClock.now }
            return state.releasedAt
        }
        if let released {
            condition.broadcast()
            return released
        }
        while true {
            if let released = state.withLock({ $0.releasedAt }) { return released }
            condition.wait()
        }
    }
}
