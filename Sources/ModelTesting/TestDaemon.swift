import Foundation
import Logging
import ModelRemote
import ModelServer
import ModelStorage
import StandardBackends

/// A modeld running inside the test process, on a socket in a fresh short temporary directory
/// of its own, with no default store. Use one per test (``withDaemon(_:)``) or one per test
/// process (``shared``); give each test its own store with `withTestStore` or the
/// `.isolatedStore` trait.
public final class TestDaemon: Sendable {
    /// The daemon's directory: `socket` and `data/` inside it.
    public let directory: URL
    /// The daemon's socket.
    public let socketPath: String
    let daemon: ModelDaemon

    private init(directory: URL, configure: (inout ServerConfiguration) -> Void) {
        self.directory = directory
        socketPath = directory.appendingPathComponent("socket").path
        var configuration = ServerConfiguration(
            socketPath: socketPath, dataDirectory: directory.appendingPathComponent("data").path,
            registry: .daemon)
        configuration.defaultStore = nil
        configure(&configuration)
        daemon = ModelDaemon(configuration: configuration, logger: TestLogging.logger())
    }

    /// Begins stopping the daemon now, as SIGTERM would (``withDaemon(directory:configure:_:)``
    /// stops it at the end anyway): for tests of what happens to clients when it goes away.
    public func shutdown() {
        daemon.shutdown()
    }

    /// The daemon's configuration.
    public var configuration: ServerConfiguration { daemon.configuration }

    /// Runs a daemon for the length of `body`, then stops it and removes its directory, whether
    /// `body` succeeds or throws. `configure` adjusts the daemon's settings (idle timeout, limits).
    /// With a `directory`, the daemon uses it (its socket and data inside) and leaves it in place,
    /// so that a later daemon can open the same stores.
    ///
    /// A daemon started again on a `directory` that a daemon of this process used before waits,
    /// up to five seconds, for that daemon's lock to be let go everywhere: the earlier daemon
    /// released it, but a child process another thread spawned meanwhile holds a copy of the
    /// lock's descriptor until it has closed it (Foundation's `Process` closes every inherited
    /// descriptor, one by one, before its `exec`), and the lock is held until the last copy is
    /// closed. A start failed so once in a run of the suite, beside tests that spawn processes.
    /// `whileLockHeld` is called each time a start finds the lock so held (for tests of the wait).
    public static func withDaemon<T: Sendable>(
        directory: URL? = nil, configure: (inout ServerConfiguration) -> Void = { _ in },
        whileLockHeld: () -> Void = {}, _ body: (TestDaemon) async throws -> T
    ) async throws -> T {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while true {
            do {
                return try await runDaemon(directory: directory, configure: configure, body)
            } catch let StartFailure.lockedByThisProcess(error) {
                guard clock.now < deadline else { throw error }
                whileLockHeld()
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Why ``runDaemon(directory:configure:_:)`` did not start a daemon that may start if asked
    /// again: its data directory's or socket's lock is held under this process's own pid.
    private enum StartFailure: Error {
        case lockedByThisProcess(DaemonStartError)
    }

    private static func runDaemon<T: Sendable>(
        directory: URL?, configure: (inout ServerConfiguration) -> Void, _ body: (TestDaemon) async throws -> T
    ) async throws -> T {
        let daemon = TestDaemon(directory: try directory ?? TemporaryDirectory.make(prefix: "mt"), configure: configure)
        defer { if directory == nil { try? FileManager.default.removeItem(at: daemon.directory) } }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await daemon.daemon.run() }
            do {
                do {
                    try await daemon.daemon.waitUntilReady()
                } catch let error as DaemonStartError where directory != nil && error.lockHolder == getpid() {
                    throw StartFailure.lockedByThisProcess(error)
                }
                let result = try await body(daemon)
                daemon.daemon.shutdown()
                try await group.waitForAll()
                return result
            } catch {
                daemon.daemon.shutdown()
                try? await group.waitForAll()
                throw error
            }
        }
    }

    /// One daemon for the whole test process, started on first use. Its directory is removed
    /// when the process exits, or, when it stops without cleaning up (a trap), by the next test
    /// process's shared daemon.
    public static var shared: TestDaemon {
        get async throws { try await SharedDaemon.instance.get() }
    }

    /// Connects a client to this daemon for the length of `body`.
    public func withClient<T: Sendable>(_ body: (DaemonClient) async throws -> T) async throws -> T {
        try await DaemonClient.withClient(socketPath: socketPath, body)
    }

    fileprivate static func startShared() async throws -> TestDaemon {
        // Those of test processes that stopped without cleaning up (a trap in a test).
        TemporaryDirectory.removeAbandoned(prefix: "ms")
        let daemon = TestDaemon(directory: try TemporaryDirectory.make(prefix: "ms"), configure: { _ in })
        TemporaryDirectory.removeAtExit(daemon.directory)
        // The shared daemon lives as long as the test process, beyond any one test's scope.
        Task { try? await daemon.daemon.run() }
        try await daemon.daemon.waitUntilReady()
        return daemon
    }
}

/// Starts the shared daemon once, however many tests ask for it at the same time.
private actor SharedDaemon {
    static let instance = SharedDaemon()
    private var starting: Task<TestDaemon, any Error>?

    func get() async throws -> TestDaemon {
        if let starting { return try await starting.value }
        let task = Task { try await TestDaemon.startShared() }
        starting = task
        return try await task.value
    }
}

/// Logging for daemons inside tests: quiet, unless `MODELD_TEST_LOG` names a level.
enum TestLogging {
    static func logger() -> Logger {
        guard let level = ProcessInfo.processInfo.environment["MODELD_TEST_LOG"].flatMap(Logger.Level.init(rawValue:))
        else {
            return Logger(label: "modeld-test", factory: { _ in SwiftLogNoOpLogHandler() })
        }
        var logger = Logger(label: "modeld-test", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = level
        return logger
    }
}
