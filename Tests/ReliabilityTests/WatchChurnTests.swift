import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import Synchronization
import Testing

extension OneAtATime {
    /// Watches opened and abandoned by the thousand — cancelled, timed out, or their client gone —
    /// leave the spawned daemon holding what it held before: no watch, no more memory, no more
    /// threads or descriptors.
    @Suite struct WatchChurnTests {
        static let watches = 10_000
        static let concurrency = 32
        /// Watches a lane opens on one connection: at most 100 of them reset their stream.
        static let watchesPerConnection = 150

        /// A watch request on the store: every fourth a fetch, the rest counts.
        static func request(_ index: Int) -> Modeld_V1_WatchRequest {
            Modeld_V1_WatchRequest.with {
                $0.store = "churn"
                if index % 4 == 0 {
                    $0.fetch = FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("title")], limit: 5).wire
                } else {
                    $0.count = FetchDescriptor(entityName: "Item").wire
                }
            }
        }

        /// Opens `count` watches, `concurrency` at a time, each ended as `end` says after its first response.
        static func churn(
            _ socketPath: String, count: Int, first: Int, end: @escaping @Sendable (Int) -> Ending
        ) async throws -> Int {
            let answered = Tally()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<concurrency {
                    group.addTask {
                        // Each lane's client carries its cancelled and timed-out watches, one after
                        // another, a connection for each `watchesPerConnection` of them: an HTTP/2
                        // connection whose client resets more than 200 streams within 30 seconds is
                        // closed by the server (swift-nio-http2's guard against rapid resets).
                        var index = first + lane
                        while index < first + count {
                            try await withClient(socketPath) { queries in
                                for _ in 0..<watchesPerConnection where index < first + count {
                                    let ending = end(index)
                                    if ending == .clientGone {
                                        try await clientGone(socketPath, index, answered)
                                    } else {
                                        try await watchOnce(queries, index, ending: ending, answered)
                                    }
                                    index += concurrency
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            return answered.value
        }

        enum Ending: Sendable { case cancelled, deadline, clientGone }

        static func withClient<T: Sendable>(
            _ socketPath: String, _ body: (Modeld_V1_QueryService.Client<HTTP2ClientTransport.Posix>) async throws -> T
        ) async throws -> T {
            let transport = try HTTP2ClientTransport.Posix(
                target: .unixDomainSocket(path: socketPath), transportSecurity: .plaintext)
            return try await withGRPCClient(transport: transport) {
                try await body(Modeld_V1_QueryService.Client(wrapping: $0))
            }
        }

        /// One watch: its first response read, then cancelled (the handler returns) or left to its deadline.
        static func watchOnce(
            _ queries: Modeld_V1_QueryService.Client<HTTP2ClientTransport.Posix>, _ index: Int, ending: Ending,
            _ answered: Tally
        ) async throws {
            var options = CallOptions.defaults
            if ending == .deadline { options.timeout = .milliseconds(30) }
            do {
                try await queries.watch(request(index), options: options) { response in
                    for try await _ in response.messages {
                        answered.add()
                        if ending == .cancelled { return }
                    }
                }
            } catch let error as RPCError where error.code == .deadlineExceeded || error.code == .cancelled {
                // The deadline passed while the watch waited: what this watch is for.
            }
        }

        /// A watch whose client's connection is closed under it: a task holding the client is cancelled.
        static func clientGone(_ socketPath: String, _ index: Int, _ answered: Tally) async throws {
            let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
            let counter = Tally()
            let task = Task {
                try? await withClient(socketPath) { queries in
                    try await queries.watch(request(index)) { response in
                        for try await _ in response.messages {
                            counter.add()
                            continuation.yield()
                        }
                    }
                }
                continuation.finish()
            }
            for await _ in stream { break }
            task.cancel()
            _ = await task.value
            if counter.value > 0 { answered.add() }
        }

        @Test(.timeLimit(.minutes(10)))
        func tenThousandAbandonedWatchesLeaveNothingBehind() async throws {
            try await StalledClients.withDaemon { daemon in
                let pid = daemon.processIdentifier
                try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                    _ = try await client.createStore("churn", schema: Catalog.schema)
                    try await client.apply(
                        (0..<20).map {
                            .insert(
                                entity: "Item", attributes: ["title": .string("item \($0)")], relationships: [:],
                                id: nil)
                        }, in: "churn")
                }
                // Saves go on throughout, so that watches are woken while they come and go.
                let saver = Task {
                    try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                        var n = 0
                        while !Task.isCancelled {
                            n += 1
                            try await client.apply(
                                [
                                    .insert(
                                        entity: "Item", attributes: ["title": .string("saved \(n)")],
                                        relationships: [:],
                                        id: nil)
                                ],
                                in: "churn")
                            try await Task.sleep(for: .milliseconds(5))
                        }
                    }
                }
                defer { saver.cancel() }
                let ending: @Sendable (Int) -> Ending = { [.cancelled, .deadline, .clientGone][$0 % 3] }
                // A warm-up, so that what the daemon allocates once (pools, caches) is in the baseline.
                _ = try await Self.churn(daemon.socketPath, count: 1_000, first: 0, end: ending)
                try await Self.waitForNoWatches(daemon)
                let memory = try #require(ProcessFacts.residentBytes(of: pid))
                let threads = try #require(Self.threads(of: pid))
                let descriptors = try #require(ProcessFacts.openDescriptors(of: pid))

                let started = ContinuousClock.now
                let answered = try await Self.churn(daemon.socketPath, count: Self.watches, first: 1_000, end: ending)
                let elapsed = ContinuousClock.now - started
                #expect(answered >= Self.watches * 2 / 3, "each watch but those timed out first got its first result")
                try await Self.waitForNoWatches(daemon)
                saver.cancel()

                let memoryAfter = try #require(ProcessFacts.residentBytes(of: pid))
                let threadsAfter = try #require(Self.threads(of: pid))
                // Sockets of clients that left may take a moment to close on the daemon's side: wait
                // (for the count, an event) up to 30 s for them.
                var descriptorsAfter = try #require(ProcessFacts.openDescriptors(of: pid))
                let settle = ContinuousClock.now + .seconds(30)
                while descriptorsAfter > descriptors + 2, ContinuousClock.now < settle {
                    try await Task.sleep(for: .milliseconds(100))
                    descriptorsAfter = try #require(ProcessFacts.openDescriptors(of: pid))
                }
                print(
                    "watch churn: \(Self.watches) watches in \(elapsed); memory \(memory / 1024) KiB -> \(memoryAfter / 1024) KiB, threads \(threads) -> \(threadsAfter), descriptors \(descriptors) -> \(descriptorsAfter)"
                )
                // What a leaked watch would hold — its task, its last result (five objects), its
                // subscription — is several KiB: ten thousand would be tens of MiB. Any call leaves
                // the daemon a little bigger (about 250 bytes per call, measured with fetches in place
                // of watches: allocator growth, not watches), so the bound is a KiB per watch.
                #expect(memoryAfter < memory + Self.watches * 1024, "memory \(memory) -> \(memoryAfter)")
                // Thread pools grow under load (Dispatch's, whose threads block on the disk, grew by
                // four once in a full run of the suite on a loaded machine); a thread per watch, or
                // per hundred watches, would not fit.
                #expect(threadsAfter <= threads + 16, "threads \(threads) -> \(threadsAfter)")
                // A descriptor per watch would be thousands; a store's reader pool may have grown
                // by a few connections under load.
                #expect(descriptorsAfter <= descriptors + 16, "descriptors \(descriptors) -> \(descriptorsAfter)")
                // Clients leaving is no fault of the daemon's: its log says nothing of them at its default level.
                #expect(!daemon.log.contains("unexpected error"), "\(daemon.log.suffix(2_000))")
            }
        }

        /// Waits (an event: the daemon's count reaching zero) until the daemon holds no watch.
        static func waitForNoWatches(_ daemon: ModeldProcess) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            var open = -1
            while ContinuousClock.now < deadline {
                open = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                    try await $0.status().openWatches
                }
                if open == 0 { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            Issue.record("\(open) watches still open a minute after their clients left")
        }

        static func threads(of pid: Int32) -> Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
            for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
                return Int(
                    line.split(separator: "\t").last.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? "")
            }
            return nil
        }
    }
}
