import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import Testing

extension OneAtATime {
    /// A watcher that stops reading holds the daemon to one result and one token: saves go on, the
    /// changes it misses are merged rather than queued, and after the stall timeout it is ended.
    @Suite struct StalledWatchTests {
        /// Runs `rounds` saves of ten objects' 50 KB bodies; returns the daemon's peak memory and the time taken.
        static func saves(_ daemon: ModeldProcess, _ ids: [PersistentIdentifier], rounds: Int, offset: Int) async throws
            -> (Int, Duration)
        {
            var peak = 0
            let started = ContinuousClock.now
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                for round in offset..<(offset + rounds) {
                    let body = String(repeating: Character(UnicodeScalar(UInt8(97 + round % 26))), count: 50_000)
                    let slice = round % 10 * 10
                    try await client.apply(
                        ids[slice..<(slice + 10)].map {
                            .update($0, attributes: ["body": .string(body)], relationships: [:])
                        },
                        in: "big")
                    peak = max(peak, ProcessFacts.residentBytes(of: daemon.processIdentifier) ?? 0)
                }
            }
            return (peak, ContinuousClock.now - started)
        }

        @Test(.timeLimit(.minutes(5)))
        func aStalledWatcherHoldsBoundedMemoryAndSlowsNoSave() async throws {
            try await StalledClients.withDaemon(arguments: ["--stream-stall-timeout", "5"]) { daemon in
                let pid = daemon.processIdentifier
                // 100 objects of 50 KB: a watched result of 5 MB.
                try await StalledClients.makeStore("big", on: daemon, rows: 100, bytes: 50_000)
                let ids = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                    try await client.fetch(FetchDescriptor(entityName: "Blob", resultType: .identifiers), in: "big")
                        .identifiers
                }
                let baseline = try #require(ProcessFacts.residentBytes(of: pid))
                let (withoutPeak, withoutTime) = try await Self.saves(daemon, ids, rounds: 60, offset: 0)
                let without = try await StarvationTests.settledResidentBytes(of: pid)

                let (first, firstArrived) = AsyncStream<Void>.makeStream()
                let (release, released) = AsyncStream<Void>.makeStream()
                let watcher = Task<RPCError?, Never> {
                    do {
                        let transport = try HTTP2ClientTransport.Posix(
                            target: .unixDomainSocket(path: daemon.socketPath), transportSecurity: .plaintext)
                        try await withGRPCClient(transport: transport) { grpc in
                            try await Modeld_V1_QueryService.Client(wrapping: grpc).watch(
                                .with {
                                    $0.store = "big"
                                    $0.fetch =
                                        FetchDescriptor(entityName: "Blob", sortBy: [SortDescriptor("name")]).wire
                                }
                            ) { response in
                                var isFirst = true
                                for try await _ in response.messages where isFirst {
                                    isFirst = false
                                    firstArrived.yield()
                                    // Reads nothing more until released; then reads what is left.
                                    for await _ in release {}
                                }
                            }
                        }
                        return nil
                    } catch let error as RPCError {
                        return error
                    } catch {
                        return RPCError(code: .unknown, message: "\(error)")
                    }
                }
                defer {
                    released.finish()
                    watcher.cancel()
                }

                // Without a watcher, then with the stalled one: 60 saves, each rewriting ten of the
                // watched objects (500 KB of changes each: 30 MB if a daemon queued them for it).
                _ = await first.first { true }
                let (_, withTime) = try await Self.saves(daemon, ids, rounds: 60, offset: 60)
                let with = try await StarvationTests.settledResidentBytes(of: pid)
                let (_, moreTime) = try await Self.saves(daemon, ids, rounds: 240, offset: 120)
                let more = try await StarvationTests.settledResidentBytes(of: pid)
                print(
                    "stalled watcher: 60 saves took \(withoutTime) alone, \(withTime) beside it, 240 more \(moreTime); daemon memory \(baseline / 1024) KiB, after the saves alone \(without / 1024) KiB (peak \(withoutPeak / 1024)), after 60 beside the watcher \(with / 1024) KiB, after 240 more \(more / 1024) KiB"
                )
                // What the daemon holds for the watcher — its last result (5 MB), the one it read
                // next, what the transport took before it stopped taking more (the client's window)
                // — does not grow with the saves it misses: 240 saves (120 MB of changes) later, the
                // daemon is the size it was.
                #expect(more < with + 4 * 1024 * 1024, "after 60 saves \(with), after 240 more \(more)")
                #expect(with < without + 64 * 1024 * 1024, "with \(with), without \(without)")

                // Past the stall timeout, the daemon ends the watch and frees what it held (an event
                // the test waits for: its count of open watches reaching zero)…
                let deadline = ContinuousClock.now + .seconds(120)
                var open = 1
                while open > 0, ContinuousClock.now < deadline {
                    open = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                        try await $0.status().openWatches
                    }
                    if open > 0 { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(open == 0)
                // …and the client, reading again, hears why.
                released.finish()
                let error = await watcher.value
                print("stalled watcher ended: \(String(describing: error))")
                // RESOURCE_EXHAUSTED when the status can reach it; over HTTP/2 its stream is full, so
                // the daemon's reset (CANCEL) is what arrives.
                #expect(
                    error?.code == .resourceExhausted || error?.code == .unavailable, "\(String(describing: error))")
            }
        }
    }
}
