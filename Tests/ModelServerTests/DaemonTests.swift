#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelRemote
import ModelCore
import ModelFixtures
import ModelServer
import ModelTesting
import StandardBackends
import Testing

/// Starting and stopping safely: sockets, locks, permissions, status, graceful shutdown.
@Suite struct DaemonTests {
    @Test func theSocketAndDataDirectoryGetTheirPermissions() async throws {
        try await TestDaemon.withDaemon { daemon in
            let socket = try FileManager.default.attributesOfItem(atPath: daemon.socketPath)
            #expect((socket[.posixPermissions] as? Int) == 0o660)
            #expect((socket[.type] as? FileAttributeType) == .typeSocket)
            let data = try FileManager.default.attributesOfItem(atPath: daemon.configuration.dataDirectory)
            #expect((data[.posixPermissions] as? Int) == 0o700)
            let status = try await daemon.withClient { try await $0.status() }
            #expect(status.version == ModelDaemon.version && status.processIdentifier == Int(getpid()))
            #expect(status.dataDirectory == daemon.configuration.dataDirectory && status.stores == 0)
        }
    }

    @Test func aStaleSocketIsReplaced() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mk")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A socket file nobody listens on, as a daemon that died leaves behind.
        let path = directory.appendingPathComponent("socket").path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        close(fd)
        #expect(FileManager.default.fileExists(atPath: path))
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            let status = try await daemon.withClient { try await $0.status() }
            #expect(status.stores == 0)
        }
        #expect(!FileManager.default.fileExists(atPath: path), "the socket is removed at shutdown")
    }

    /// A daemon started again on its directory in the same process waits for the earlier one's
    /// lock to be let go: here a copy of it (as a child process spawned meanwhile holds one until
    /// it closes it) is held for a moment after the first daemon stopped.
    @Test func aRestartWaitsForTheLockACopyStillHolds() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mw")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            _ = try await daemon.withClient { try await $0.createStore("kept") }
        }
        // The lock file still names this process, as the first daemon left it.
        let lockPath = directory.appendingPathComponent("data/modeld.lock").path
        var copy = open(lockPath, O_RDWR | O_CLOEXEC)
        #expect(copy >= 0)
        // A child process another test spawns meanwhile may hold the first daemon's lock for a
        // moment, until it closes its inherited descriptors (see TestDaemon.withDaemon): the
        // lock is taken once that child lets it go.
        let deadline = ContinuousClock.now + .seconds(5)
        while flock(copy, LOCK_EX | LOCK_NB) != 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(flock(copy, LOCK_EX | LOCK_NB) == 0)
        // The copy is let go once the restart has found the lock held.
        let stores = try await TestDaemon.withDaemon(
            directory: directory,
            whileLockHeld: {
                if copy >= 0 { close(copy) }
                copy = -1
            }
        ) { daemon in
            try await daemon.withClient { try await $0.stores() }
        }
        #expect(stores.map(\.name) == ["kept"])
    }

    /// A second daemon never steals a live daemon's socket or data directory.
    @Test func aLiveDaemonIsNotDisturbed() async throws {
        try await TestDaemon.withDaemon { first in
            _ = try await first.withClient { try await $0.createStore("kept") }
            var sameSocket = ServerConfiguration(
                socketPath: first.socketPath, dataDirectory: first.directory.appendingPathComponent("other").path,
                registry: .daemon)
            sameSocket.defaultStore = nil
            let socketError = await #expect(throws: DaemonStartError.self) {
                try await ModelDaemon(configuration: sameSocket).run()
            }
            #expect(
                socketError?.description.contains("already using the socket \(first.socketPath)") == true,
                "\(String(describing: socketError))")

            let sameData = ServerConfiguration(
                socketPath: first.directory.appendingPathComponent("s2").path,
                dataDirectory: first.configuration.dataDirectory, registry: .daemon)
            let dataError = await #expect(throws: DaemonStartError.self) {
                try await ModelDaemon(configuration: sameData).run()
            }
            #expect(
                dataError?.description.contains("already using the data directory") == true,
                "\(String(describing: dataError))")
            #expect(dataError?.description.contains("pid \(getpid())") == true, "\(String(describing: dataError))")

            #expect(try await first.withClient { try await $0.stores() }.map(\.name) == ["kept"])
        }
    }

    /// The limit counts the framed socket beside the path (`.frames` after it, within NIO's 103
    /// bytes): a path of 97 to 103 bytes once lost its framed socket silently or failed with
    /// NIO's words, one of 104 to 107 failed with NIO's words.
    @Test(arguments: [97, 101, 104, 110])
    func aSocketPathTooLongIsExplained(length: Int) async throws {
        let directory = try TemporaryDirectory.make(prefix: "ml")
        defer { try? FileManager.default.removeItem(at: directory) }
        let prefix = directory.path + "/"
        let long = prefix + String(repeating: "s", count: length - prefix.utf8.count)
        #expect(long.utf8.count == length)
        let daemon = ModelDaemon(
            configuration: ServerConfiguration(
                socketPath: long, dataDirectory: directory.path + "/data", registry: .daemon))
        let error = await #expect(throws: DaemonStartError.self) { try await daemon.run() }
        #expect(
            error?.description.contains("is \(length) bytes long; the limit is 96") == true,
            "\(String(describing: error))")
        await #expect(throws: DaemonStartError.self) { try await daemon.waitUntilReady() }
    }

    /// A path of 96 bytes is served on both sockets.
    @Test func aSocketPathOfTheLongestLengthServesBothSockets() async throws {
        let directory = try TemporaryDirectory.make(prefix: "ml")
        defer { try? FileManager.default.removeItem(at: directory) }
        let prefix = directory.path + "/"
        let path = prefix + String(repeating: "s", count: 96 - prefix.utf8.count)
        try await TestDaemon.withDaemon(directory: directory, configure: { $0.socketPath = path }) { _ in
            _ = try await DaemonClient.withClient(socketPath: path, transport: .framed) {
                try await $0.createStore("long")
            }
            for transport in [DaemonTransport.framed, .http2] {
                let stores = try await DaemonClient.withClient(socketPath: path, transport: transport) {
                    try await $0.stores()
                }
                #expect(stores.map(\.name) == ["long"], "\(transport)")
            }
        }
    }

    /// A data directory or socket directory that cannot be made is named, with why and the
    /// option that chooses another, in one line; nothing is made beside it.
    @Test func directoriesThatCannotBeMadeAreExplained() async throws {
        let directory = try TemporaryDirectory.make(prefix: "md")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("a-file").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let cases: [(socket: String, data: String, message: String)] = [
            (
                directory.path + "/s1", file,
                "cannot make the data directory \(file): it is a file; choose another with --data-dir (MODELD_DATA_DIR)"
            ),
            (
                directory.path + "/s2", file + "/data",
                "cannot make the data directory \(file)/data: \(file) is a file; choose another with --data-dir (MODELD_DATA_DIR)"
            ),
            (
                file + "/s3", directory.path + "/data",
                "cannot make the socket's directory \(file): it is a file; choose another with --socket (MODELD_SOCKET)"
            ),
        ]
        for (socket, data, message) in cases {
            let daemon = ModelDaemon(
                configuration: ServerConfiguration(socketPath: socket, dataDirectory: data, registry: .daemon))
            let error = await #expect(throws: DaemonStartError.self) { try await daemon.run() }
            #expect(error?.description == message, "\(String(describing: error))")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["a-file", "data"])
    }

    /// Shutdown lets calls under way finish, ends followers, closes sessions and stores.
    @Test func shutdownIsGraceful() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mg")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outcome = Shared<String>("")
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                try await client.createStore("trips", schema: SampleTrips.schema)
                try await client.createStore("log", schema: SampleTrips.schema)
                try await client.apply(
                    [
                        .insert(
                            entity: "Trip", attributes: trip("Oslo", "2026-05-01", "2026-05-03"),
                            relationships: [:], id: nil)
                    ], in: "log")
                let session = try await client.openSession(on: "trips")
                _ = try await session.insert("Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"))
                let following = TestEvent()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        do {
                            // The saved transaction arrives first: the stream is open and following.
                            try await client.followHistory(after: nil, in: "log") { _ in following.signal() }
                            outcome.update { $0 = "ended" }
                        } catch let error as ModelError {
                            outcome.update { $0 = "\(error.code)" }
                        }
                    }
                    #expect(await following.wait(), "the follower never saw the saved transaction")
                    daemon.shutdown()
                    try await group.waitForAll()
                }
            }
        }
        // The follower's stream ended when the daemon stopped, rather than holding it up.
        #expect(["ended", "cancelled", "unavailable"].contains(outcome.value), "\(outcome.value)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("socket").path))
        // The unsaved insert was discarded; the store reopens empty.
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                let count = try await client.count(FetchDescriptor(entityName: "Trip"), in: "trips")
                #expect(count == 0)
            }
        }
    }
}
