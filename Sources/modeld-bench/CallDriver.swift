import Foundation
import ModelCore
import ModelRemote

/// Calls of one kind, one after another from one connection, against a daemon already running:
/// what `scripts/callgrind` counts the instructions of, on each side. No timing, no baseline.
struct CallDriver {
    /// What the driver does.
    enum Kind: String, CaseIterable {
        /// Makes the `items` store and saves `count` objects in it.
        case setup
        /// `DaemonService/Status`: a call that does nothing but answer.
        case empty
        /// A point read by URI of one of the objects `setup` saved.
        case read
        /// A save of one new object.
        case save
        /// The indexed query of workload 4: `score >= x ORDER BY score LIMIT 50`.
        case query
        /// ``read`` in a session of its own, as a ModelClient context reads.
        case sessionRead = "session-read"
        /// ``query`` in a session of its own, as a ModelClient context fetches.
        case sessionQuery = "session-query"
        /// ``save`` from 32 connections at once, each `count` saves.
        case save32 = "save-32"
        /// ``read`` from 16 connections at once, each `count` reads: workload 3's point reads,
        /// whose answers connections sharing an event loop have flushed together.
        case read16 = "read-16"
        /// ``read`` through the blocking client (`BlockingDaemonClient`), on a thread of its own.
        case blockingRead = "blocking-read"
        /// The grouped count of workload 5: objects per category.
        case groupedCount = "grouped-count"
        /// What workload 8 does per test: a store made, one save in it, the store dropped.
        case testStore = "test-store"
    }

    let socketPath: String
    /// Where ``Kind/setup`` makes the store (nil: the daemon's default backend).
    var storeURL: String? = nil
    let store = "items"

    func run(_ kind: Kind, count: Int) async throws {
        try await DaemonClient.withClient(socketPath: socketPath) { client in
            try await withTaskExecutorPreference(client.preferredExecutor) {
                try await run(kind, count: count, client: client)
            }
        }
    }

    private func run(_ kind: Kind, count: Int, client: DaemonClient) async throws {
        switch kind {
        case .setup:
            _ = try await client.createStore(store, backend: nil, url: storeURL, schema: try Dataset.schema())
            try await client.apply((1...count).map(Dataset.insert), in: store)
        case .empty:
            for _ in 0..<count { _ = try await client.status() }
        case .save32:
            let store = store
            try await onConnections(32) { index, client in
                let first = 2_000_000_000 + index * 1_000_000 + Int.random(in: 0..<900_000)
                for n in first..<first + count { try await client.apply([Dataset.insert(n)], in: store) }
            }
        case .read16:
            let storeIdentifier = try await identifier(client)
            let store = store
            try await onConnections(16) { index, client in
                for n in 0..<count {
                    let id = PersistentIdentifier(
                        storeIdentifier: storeIdentifier, entityName: "Item",
                        key: .permanent(Int64((index * 61 + n) % 1_000 + 1)))
                    let objects = try await client.objects([id], in: store)
                    guard objects.count == 1 else {
                        throw BenchError("read of \(id) returned \(objects.count) objects")
                    }
                }
            }
        case .blockingRead:
            let storeIdentifier = try await identifier(client)
            let (socketPath, store) = (socketPath, store)
            try await ModeldWorkloads.onThread {
                let blocking = try BlockingDaemonClient(socketPath: socketPath)
                defer { blocking.close() }
                for n in 0..<count {
                    let id = PersistentIdentifier(
                        storeIdentifier: storeIdentifier, entityName: "Item", key: .permanent(Int64(n % 1_000 + 1)))
                    let objects = try blocking.objects([id], in: store)
                    guard objects.count == 1 else {
                        throw BenchError("read of \(id) returned \(objects.count) objects")
                    }
                }
            }
        case .read, .sessionRead:
            let storeIdentifier = try await identifier(client)
            let session = kind == .sessionRead ? try await client.openSession(on: store) : nil
            for n in 0..<count {
                let id = PersistentIdentifier(
                    storeIdentifier: storeIdentifier, entityName: "Item", key: .permanent(Int64(n % 1_000 + 1)))
                let objects =
                    if let session { try await session.objects([id]) } else {
                        try await client.objects([id], in: store)
                    }
                guard objects.count == 1 else { throw BenchError("read of \(id) returned \(objects.count) objects") }
            }
            _ = try await session?.close()
        case .groupedCount:
            for _ in 0..<count {
                let rows = try await client.aggregate(Dataset.groupedCount, in: store)
                guard rows.count == Dataset.categories else {
                    throw BenchError("the grouped count gave \(rows.count) groups, not \(Dataset.categories)")
                }
            }
        case .testStore:
            let schema = try Dataset.schema()
            for n in 0..<count {
                let name = "test-store-\(n)"
                _ = try await client.createStore(name, schema: schema)
                try await client.apply([Dataset.insert(n + 1)], in: name)
                _ = try await client.dropStore(name, force: true)
            }
        case .save:
            let first = Int.random(in: 1_000_000..<1_000_000_000)
            for n in first..<first + count { try await client.apply([Dataset.insert(n)], in: store) }
        case .query, .sessionQuery:
            let session = kind == .sessionQuery ? try await client.openSession(on: store) : nil
            for n in 0..<count {
                let bound = Int64((n &* 104_729) % 900_000)
                var descriptor = FetchDescriptor(
                    entityName: "Item",
                    predicate: .comparison(
                        Comparison(.keyPath(PropertyPath(["score"])), .greaterOrEqual, .literal(.int(bound)))),
                    sortBy: [SortDescriptor(PropertyPath(["score"]))], limit: 50)
                descriptor.relationshipKeyPathsForPrefetching = []
                let result =
                    if let session { try await session.fetch(descriptor) } else {
                        try await client.fetch(descriptor, in: store)
                    }
                guard result.count == 50 else { throw BenchError("the query returned \(result.count) objects") }
            }
            _ = try await session?.close()
        }
    }

    /// Runs `body` on `connections` connections at once, each a client of its own whose tasks
    /// prefer its connection's executor, with the connection's index.
    private func onConnections(
        _ connections: Int, _ body: @escaping @Sendable (Int, DaemonClient) async throws -> Void
    ) async throws {
        let socketPath = socketPath
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<connections {
                group.addTask {
                    try await DaemonClient.withClient(socketPath: socketPath) { client in
                        try await withTaskExecutorPreference(client.preferredExecutor) { try await body(index, client) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func identifier(_ client: DaemonClient) async throws -> UUID {
        guard let info = try await client.stores().first(where: { $0.name == store }) else {
            throw BenchError("no store '\(store)': run --calls setup first")
        }
        return info.storeIdentifier
    }
}
