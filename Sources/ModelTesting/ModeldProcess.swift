#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelRemote
import ModelCore
import Synchronization

/// The real `modeld` executable, run as a child process in a temporary directory of its own:
/// for tests that kill, restart or signal the daemon. Its output goes to `modeld.log` in the
/// directory (read it with ``log``); the directory is removed by ``remove()``.
public final class ModeldProcess: @unchecked Sendable {
    // @unchecked: `process` is only replaced by restart(), which tests call from one task at a time.
    public let directory: URL
    public let socketPath: String
    public let dataDirectory: String
    public let executable: URL
    public private(set) var arguments: [String]
    /// A command that runs modeld (`prlimit --nofile=256:256`, say), or empty to run it directly.
    public let launcher: [String]
    private var process: Process

    /// Starts modeld with `--socket` and `--data-dir` in a new temporary directory (or
    /// `directory`), plus `arguments`, and waits until it answers. With a `launcher`, modeld is
    /// started by it (`["/usr/bin/prlimit", "--nofile=256:256"]`): the launcher must exec modeld,
    /// so that the process is modeld's.
    public static func launch(
        arguments: [String] = [], environment: [String: String] = [:], directory: URL? = nil,
        executable: URL? = nil, launcher: [String] = []
    ) async throws -> ModeldProcess {
        guard let executable = executable ?? locateExecutable() else {
            throw ModelError(
                .notFound, "cannot find the modeld executable: build it (swift build) or set MODELD_EXECUTABLE")
        }
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            let named = executable.path == ProcessInfo.processInfo.environment["MODELD_EXECUTABLE"]
            throw ModelError(
                .notFound,
                "\(executable.path)\(named ? " (MODELD_EXECUTABLE)" : "") is not an executable file: build modeld (swift build --product modeld) or point MODELD_EXECUTABLE at one",
                context: ["executable": executable.path])
        }
        let directory = try directory ?? TemporaryDirectory.make(prefix: "mp")
        let process = ModeldProcess(
            directory: directory, executable: executable, arguments: arguments, launcher: launcher)
        try process.start(environment: environment)
        try await process.waitUntilReady()
        return process
    }

    private init(directory: URL, executable: URL, arguments: [String], launcher: [String]) {
        self.directory = directory
        self.socketPath = directory.appendingPathComponent("socket").path
        self.dataDirectory = directory.appendingPathComponent("data").path
        self.executable = executable
        self.arguments = arguments
        self.launcher = launcher
        self.process = Process()
    }

    /// `MODELD_EXECUTABLE`, or `modeld` beside the running test bundle (`.build/debug/modeld`).
    public static func locateExecutable() -> URL? {
        if let path = ProcessInfo.processInfo.environment["MODELD_EXECUTABLE"] { return URL(fileURLWithPath: path) }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("modeld")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    /// The process identifier.
    public var processIdentifier: Int32 { process.processIdentifier }

    /// What the daemon has written so far.
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("modeld.log"), encoding: .utf8)) ?? ""
    }

    private func start(environment: [String: String]) throws {
        let log = directory.appendingPathComponent("modeld.log")
        if !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let output = try FileHandle(forWritingTo: log)
        output.seekToEndOfFile()
        let process = Process()
        let daemonArguments = ["--socket", socketPath, "--data-dir", dataDirectory] + arguments
        if let command = launcher.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = Array(launcher.dropFirst()) + [executable.path] + daemonArguments
        } else {
            process.executableURL = executable
            process.arguments = daemonArguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try output.close()
        self.process = process
    }

    /// Waits until the daemon answers a status call (or exits, or `timeout` passes; then it is
    /// killed, so that no daemon outlives a failed start).
    public func waitUntilReady(timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        let socketPath = socketPath
        // Each try is bounded: a connection made while the daemon was still starting may never
        // answer, and the next try makes a new one. The bound doubles from try to try, since on
        // a loaded machine (a whole test suite on two cores) an answer can take seconds.
        var bound = Duration.seconds(2)
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                throw ModelError(
                    .unavailable, "modeld exited with status \(process.terminationStatus) before it was ready:\n\(log)")
            }
            let probe = Task {
                (try? await DaemonClient.withClient(socketPath: socketPath, { try await $0.status() })) != nil
            }
            let left = deadline - ContinuousClock.now
            if await Self.value(of: probe, within: min(bound, max(left, .milliseconds(100)))) == true { return }
            probe.cancel()
            bound = bound * 2
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        throw ModelError(.unavailable, "modeld did not answer within \(timeout):\n\(log)")
    }

    /// The task's value if it finishes within `limit`, else nil (the task goes on).
    private static func value<T: Sendable>(of task: Task<T, Never>, within limit: Duration) async -> T? {
        await withCheckedContinuation { (waiter: CheckedContinuation<T?, Never>) in
            let once = Mutex(false)
            let finish: @Sendable (T?) -> Void = { value in
                if once.withLock({ done in
                    defer { done = true }; return !done
                }) {
                    waiter.resume(returning: value)
                }
            }
            Task { finish(await task.value) }
            Task {
                try? await Task.sleep(for: limit)
                finish(nil)
            }
        }
    }

    /// Sends `signal` and waits for the process to exit; returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(30)) async throws -> Int32 {
        if process.isRunning { Glibc.kill(process.processIdentifier, signal) }
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                Glibc.kill(process.processIdentifier, SIGKILL)
                throw ModelError(
                    .deadlineExceeded, "modeld did not exit within \(timeout) of signal \(signal):\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return process.terminationStatus
    }

    /// Kills the daemon with SIGKILL (no cleanup at all, as a crash).
    public func kill() async throws {
        try await stop(signal: SIGKILL)
    }

    /// Starts the daemon again, on the same socket and data directory.
    public func restart(environment: [String: String] = [:]) async throws {
        if process.isRunning { try await stop() }
        try start(environment: environment)
        try await waitUntilReady()
    }

    /// Starts the daemon again with other arguments (same socket and data directory).
    public func relaunch(arguments: [String], environment: [String: String] = [:]) async throws {
        if process.isRunning { try await stop() }
        self.arguments = arguments
        try start(environment: environment)
        try await waitUntilReady()
    }

    /// Stops the daemon if it runs, and removes its directory.
    public func remove() async {
        if process.isRunning { _ = try? await stop(signal: SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }
}
