import Foundation
import ModelCore
import ModelRemote
import Synchronization

/// The workloads, through modeld's Swift client (`ModelRemote`, over the daemon's socket).
struct ModeldWorkloads {
    let socketPath: String
    let storeIdentifier: UUID
    /// The store the reads and queries use.
    var store = "items"

    /// The identifier of row `row`, made from its key as pgbench makes a random key (a client
    /// holds the identifiers of objects it has read; it does not parse URIs to read them again).
    func id(_ row: Int) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: "Item", key: .permanent(Int64(row)))
    }

    /// Inserts rows `range` in one save; returns the time it took.
    func insert(_ range: ClosedRange<Int>, into store: String? = nil) async throws -> Duration {
        let edits = range.map(Dataset.insert)
        return try await DaemonClient.withClient(socketPath: socketPath) { client in
            try await measure { try await client.apply(edits, in: store ?? self.store) }.1
        }
    }

    /// `count` point reads by URI, one after another, from one connection (on its executor).
    func pointReads(_ count: Int, rows: Int, client: DaemonClient, seed: UInt64) async throws -> Latencies {
        try await withTaskExecutorPreference(client.preferredExecutor) {
            var picker = RowPicker(rows: rows, seed: seed)
            var latencies = Latencies()
            let clock = ContinuousClock()
            for _ in 0..<count {
                let identifier = id(picker.next())
                let start = clock.now
                let objects = try await client.objects([identifier], in: store)
                latencies.record(clock.now - start)
                guard objects.count == 1 else {
                    throw BenchError("modeld read of \(identifier) returned \(objects.count) objects")
                }
            }
            return latencies
        }
    }

    /// Point reads from `clients` connections at once for `seconds`: reads per second.
    func concurrentPointReads(clients: Int, seconds: Double, rows: Int) async throws -> (rate: Double, Latencies) {
        try await concurrently(
            clients: clients, seconds: seconds,
            warmUp: { connection in
                _ = try await pointReads(20, rows: rows, client: connection, seed: 7)
            }
        ) { index, connection, deadline in
            var latencies = Latencies()
            var seed = UInt64(index + 1) * 7_777
            while ContinuousClock.now < deadline {
                latencies.append(contentsOf: try await pointReads(50, rows: rows, client: connection, seed: seed))
                seed &+= 1
            }
            return latencies
        }
    }

    /// Runs `work` on `clients` connections of their own at once, until `seconds` have passed:
    /// operations per second over all of them, and their latencies.
    private func concurrently(
        clients: Int, seconds: Double, warmUp: (DaemonClient) async throws -> Void = { _ in },
        _ work: @escaping @Sendable (Int, DaemonClient, ContinuousClock.Instant) async throws -> Latencies
    )
        async throws -> (rate: Double, Latencies)
    {
        let connections = try (0..<clients).map { _ in try DaemonClient.connect(socketPath: socketPath) }
        defer { connections.forEach { $0.close() } }
        for connection in connections { try await warmUp(connection) }
        let deadline = ContinuousClock.now + .seconds(seconds)
        let (all, elapsed) = try await measure {
            try await withThrowingTaskGroup(of: Latencies.self) { group in
                for (index, connection) in connections.enumerated() {
                    group.addTask { try await work(index, connection, deadline) }
                }
                var all = Latencies()
                for try await latencies in group { all.append(contentsOf: latencies) }
                return all
            }
        }
        return (Double(all.count) / elapsed.seconds, all)
    }

    /// The indexed query, `count` times with different bounds.
    func indexedQueries(_ count: Int, client: DaemonClient) async throws -> Latencies {
        try await withTaskExecutorPreference(client.preferredExecutor) {
            try await indexedQueriesHere(count, client: client)
        }
    }

    private func indexedQueriesHere(_ count: Int, client: DaemonClient) async throws -> Latencies {
        var latencies = Latencies()
        let clock = ContinuousClock()
        for n in 0..<count {
            var descriptor = FetchDescriptor(
                entityName: "Item",
                predicate: .comparison(
                    Comparison(
                        .keyPath(PropertyPath(["score"])), .greaterOrEqual,
                        .literal(.int(Int64(Dataset.queryBound(n)))))),
                sortBy: [SortDescriptor(PropertyPath(["score"]))], limit: 50)
            descriptor.relationshipKeyPathsForPrefetching = []
            let start = clock.now
            let result = try await client.fetch(descriptor, in: store)
            latencies.record(clock.now - start)
            guard case .objects(let objects, _) = result, objects.count == 50 else {
                throw BenchError("modeld indexed query returned \(result)")
            }
        }
        return latencies
    }

    /// `count` calls that do nothing but answer: the cost of a round trip.
    func emptyRoundTrips(_ count: Int, client: DaemonClient) async throws -> Latencies {
        try await withTaskExecutorPreference(client.preferredExecutor) {
            try await emptyRoundTripsHere(count, client: client)
        }
    }

    private func emptyRoundTripsHere(_ count: Int, client: DaemonClient) async throws -> Latencies {
        var latencies = Latencies()
        let clock = ContinuousClock()
        for _ in 0..<count {
            let start = clock.now
            _ = try await client.status()
            latencies.record(clock.now - start)
        }
        return latencies
    }

    /// Counts per category, in the store.
    func groupedCount(client: DaemonClient) async throws -> (groups: Int, Duration) {
        let (rows, elapsed) = try await measure { try await client.aggregate(Dataset.groupedCount, in: store) }
        return (rows.count, elapsed)
    }

    /// Every object, streamed in batches, counted per category here: (objects, groups, time).
    func fetchEverythingAndCount(client: DaemonClient) async throws -> (objects: Int, groups: Int, Duration) {
        let counts = Mutex<[String: Int]>([:])
        let descriptor = FetchDescriptor(entityName: "Item")
        let (objects, elapsed) = try await measure {
            try await client.fetch(descriptor, in: store, batchSize: 1_000) { batch in
                counts.withLock { counts in
                    for object in batch {
                        if case .string(let category)? = object.attributes["category"] {
                            counts[category, default: 0] += 1
                        }
                    }
                }
            }
        }
        let total = counts.withLock { $0.values.reduce(0, +) }
        guard total == objects else { throw BenchError("counted \(total) of \(objects) objects") }
        return (objects, counts.withLock { $0.count }, elapsed)
    }

    /// Saves of one new object each, from `clients` connections for `seconds`: saves per second.
    func smallSaves(clients: Int, seconds: Double, into store: String) async throws -> (rate: Double, Latencies) {
        try await concurrently(clients: clients, seconds: seconds) { index, connection, deadline in
            try await withTaskExecutorPreference(connection.preferredExecutor) {
                var latencies = Latencies()
                var n = index * 10_000_000 + 1
                let clock = ContinuousClock()
                while clock.now < deadline {
                    let start = clock.now
                    try await connection.apply([Dataset.insert(n)], in: store)
                    latencies.record(clock.now - start)
                    n += 1
                }
                return latencies
            }
        }
    }

    /// What a test harness does per test: a store of its own, one save in it, dropped. Returns
    /// the whole time and each step's latencies (create, save, drop).
    func isolatedStores(_ count: Int, schema: Schema) async throws -> (Duration, steps: [String: Latencies]) {
        try await DaemonClient.withClient(socketPath: socketPath) { client in
            var create = Latencies(), save = Latencies(), drop = Latencies()
            let clock = ContinuousClock()
            let total = try await measure {
                for n in 0..<count {
                    let name = "t-\(n)"
                    var start = clock.now
                    _ = try await client.createStore(name, schema: schema)
                    create.record(clock.now - start)
                    start = clock.now
                    try await client.apply([Dataset.insert(n + 1)], in: name)
                    save.record(clock.now - start)
                    start = clock.now
                    _ = try await client.dropStore(name, force: true)
                    drop.record(clock.now - start)
                }
            }.1
            return (total, ["create": create, "save": save, "drop": drop])
        }
    }
}
