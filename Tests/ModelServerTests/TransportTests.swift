import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import Synchronization
import Testing

/// The daemon serves the same calls over gRPC/HTTP/2 and over its framed socket beside it; a
/// client takes the framed socket when it is there. Both give the same answers and the same
/// errors.
@Suite struct TransportTests {
    @Test func theFramedSocketIsPreferredWhenServed() async throws {
        try await TestDaemon.withDaemon { daemon in
            let framed = try #require(DefaultLocations.framedSocketPath(for: daemon.socketPath))
            var info = stat()
            #expect(
                stat(framed, &info) == 0 && info.st_mode & 0o777 == 0o660, "the framed socket has the socket's mode")
            #expect(DaemonTransport.preferred(socketPath: daemon.socketPath, environment: [:]) == .framed)
            #expect(
                DaemonTransport.preferred(socketPath: daemon.socketPath, environment: ["MODELD_TRANSPORT": "http2"])
                    == .http2)
            #expect(
                DaemonTransport.preferred(socketPath: daemon.directory.path + "/nothing", environment: [:]) == .http2)
            try await daemon.withClient { client in
                #expect(client.transport == .framed)
                let status = try await client.status()
                #expect(status.processIdentifier == Int(getpid()))
            }
        }
    }

    @Test(arguments: DaemonTransport.allCases)
    func bothTransportsGiveTheSameAnswers(_ transport: DaemonTransport) async throws {
        try await TestDaemon.withDaemon(configure: { $0.maximumMessageSize = 1024 * 1024 }) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: transport) { client in
                #expect(client.transport == transport)
                try await client.createStore("trips", schema: SampleTrips.schema)
                let session = try await client.openSession(on: "trips", author: "t")
                for index in 0..<300 {
                    _ = try await session.insert(
                        "Trip", attributes: trip("T\(index)", "2026-04-01", "2026-04-0\(index % 9 + 1)"))
                }
                #expect(try await session.count(FetchDescriptor(entityName: "Trip")) == 300)
                #expect(try await session.save().token != nil)
                // A streamed fetch in batches of 7.
                let seen = Mutex<[Int]>([])
                let count = try await client.fetch(
                    FetchDescriptor(entityName: "Trip", sortBy: [try SortDescriptor(parsing: "name")]),
                    in: "trips", batchSize: 7
                ) { batch in seen.withLock { $0.append(batch.count) } }
                #expect(count == 300 && seen.withLock { $0.reduce(0, +) } == 300 && seen.withLock { $0.max() } == 7)
                #expect(try await client.history(after: nil, in: "trips").map(\.author) == ["t"])
                // Objects by identifier: in the order asked, a missing one left out, each as the fetch read it.
                let fetched = try await client.fetch(
                    FetchDescriptor(entityName: "Trip", sortBy: [try SortDescriptor(parsing: "name")]), in: "trips"
                ).objects
                let asked = [
                    fetched[250].id, fetched[3].id,
                    PersistentIdentifier(
                        storeIdentifier: fetched[0].id.storeIdentifier, entityName: "Trip", key: .permanent(99_999)),
                    fetched[120].id,
                ]
                #expect(try await client.objects(asked, in: "trips") == [fetched[250], fetched[3], fetched[120]])
                // A session reads its own pending change.
                try await session.update(fetched[3].id, attributes: ["destination": .string("Elsewhere")])
                let pending = try await session.objects([fetched[3].id, fetched[4].id])
                #expect(pending.map { $0["destination"] } == [.string("Elsewhere"), fetched[4]["destination"]])
                #expect(try await client.objects([fetched[3].id], in: "trips") == [fetched[3]])
                // The daemon's errors arrive whole.
                let missing = await expectError(.notFound) {
                    _ = try await client.count(FetchDescriptor(entityName: "Trip"), in: "nope")
                }
                #expect(missing?.message.contains("nope") == true)
                let bad = await expectError(.typeMismatch) {
                    _ = try await client.count(
                        FetchDescriptor(entityName: "Trip", predicate: where_("name > 3")), in: "trips")
                }
                #expect(bad?.message.isEmpty == false)
                // An apply naming an object of another store is refused whole, the change named;
                // one to a store that is not there, likewise.
                let stranger = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Trip", key: .permanent(1))
                let foreign = await expectError(.invalidIdentifier) {
                    _ = try await client.apply([.delete(fetched[5].id), .delete(stranger)], in: "trips")
                }
                #expect(foreign?.message.hasPrefix("change 2: ") == true, "\(String(describing: foreign))")
                #expect(try await client.objects([fetched[5].id], in: "trips") == [fetched[5]])
                let nowhere = await expectError(.notFound) {
                    _ = try await client.apply([.delete(fetched[5].id)], in: "nope")
                }
                #expect(nowhere?.message.contains("nope") == true)
                // Plain inserts in bulk (read into runs of values): every object remapped, in one
                // transaction; one that is not fit fails the whole apply, its change named.
                let bulk = (0..<2_000).map {
                    ObjectEdit.insert(
                        entity: "Trip", attributes: trip("B\($0)", "2026-05-01", "2026-05-02"), relationships: [:],
                        id: nil)
                }
                let loaded = try await client.apply(bulk, in: "trips", author: "bulk", returnTransaction: true)
                #expect(loaded.remappedIdentifiers.count == 2_000)
                #expect(loaded.transaction?.author == "bulk")
                #expect(Set(loaded.remappedIdentifiers.values) == Set(loaded.transaction?.changes.map(\.id) ?? []))
                var unfit = bulk
                unfit[6] = .insert(entity: "Trip", attributes: ["name": .int(6)], relationships: [:], id: nil)
                let refused = await expectError(.typeMismatch) { _ = try await client.apply(unfit, in: "trips") }
                #expect(refused?.message.hasPrefix("change 7: ") == true, "\(String(describing: refused))")
                // Over the size limit: refused, and the connection still serves.
                let big = await expectError(.resourceExhausted) {
                    try await client.apply(
                        [
                            .insert(
                                entity: "Trip",
                                attributes: trip(String(repeating: "x", count: 2_000_000), "2026-01-01", "2026-01-02"),
                                relationships: [:], id: nil)
                        ], in: "trips")
                }
                #expect(big?.message.contains("maximum message size") == true, "\(String(describing: big))")
                #expect(try await client.count(FetchDescriptor(entityName: "Trip"), in: "trips") == 2_300)
            }
        }
    }

    /// A client whose calls all go straight through the framed transport (so that gRPC's client
    /// under it never runs) ends cleanly, however soon it ends.
    @Test func shortLivedFramedClientsEndCleanly() async throws {
        try await TestDaemon.withDaemon { daemon in
            for _ in 0..<50 {
                let status = try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .framed) {
                    try await $0.status()
                }
                #expect(status.processIdentifier == Int(getpid()))
            }
            let client = try DaemonClient.connect(socketPath: daemon.socketPath, transport: .framed)
            #expect(try await client.status().processIdentifier == Int(getpid()))
            client.close()
            let error = await #expect(throws: ModelError.self) { _ = try await client.status() }
            #expect(error?.code == .closed, "a closed client refuses calls: \(String(describing: error))")
            #expect(error?.message.contains("was closed") == true, "\(String(describing: error))")
        }
    }

    /// Bytes that are not frames (HTTP/1, a frame of no known kind, an open frame whose method
    /// is cut short) close that one connection; the daemon and other clients go on.
    @Test func garbageOnTheFramedSocketHurtsNothing() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                try await client.createStore("kept")
                let framed = try #require(DefaultLocations.framedSocketPath(for: daemon.socketPath))
                for garbage: [UInt8] in [
                    Array("GET / HTTP/1.1\r\n\r\n".utf8), [0, 0, 0, 4, 0, 0, 0, 1, 99, 1, 2, 3, 4],
                    [0, 0, 0, 3, 0, 0, 0, 1, 1, 0xFF, 0xFF, 0xFF],
                ] {
                    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                    var address = sockaddr_un()
                    address.sun_family = sa_family_t(AF_UNIX)
                    withUnsafeMutableBytes(of: &address.sun_path) { raw in
                        for (index, byte) in framed.utf8.enumerated() { raw[index] = byte }
                    }
                    let connected = withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                        }
                    }
                    #expect(connected == 0)
                    _ = garbage.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    var byte: UInt8 = 0
                    var timeout = timeval(tv_sec: 5, tv_usec: 0)
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    // The daemon answers a frame it cannot read by closing: read sees the end.
                    #expect(read(fd, &byte, 1) == 0, "\(garbage)")
                    close(fd)
                    #expect(try await client.stores().map(\.name) == ["kept"])
                }
            }
        }
    }
}
