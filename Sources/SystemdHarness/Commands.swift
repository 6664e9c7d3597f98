import Foundation

/// What a finished command printed and how it ended.
package struct CommandResult {
    package var status: Int32
    package var output: String
    package var error: String
}

/// Runs `executable` with `arguments` to completion, its output going to files (so that a full
/// pipe never blocks it), and returns what it printed.
package func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, in directory: URL)
    async throws
    -> CommandResult
{
    let id = UUID().uuidString.prefix(8)
    let out = directory.appendingPathComponent("out-\(id)"), err = directory.appendingPathComponent("err-\(id)")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
    process.standardOutput = outHandle
    process.standardError = errHandle
    try process.run()
    // The child has its own copies. Left to Foundation, these stayed open in this process (and
    // were inherited by every program it started after): 905 of them midway through the test
    // suite, when a PostgreSQL server restarted by a test refused to start ("insufficient file
    // descriptors available to start server process").
    try outHandle.close()
    try errHandle.close()
    // Polled, not waitUntilExit(): a test must not block one of the few threads tasks run on.
    while process.isRunning { try await Task.sleep(for: .milliseconds(5)) }
    defer {
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.removeItem(at: err)
    }
    return CommandResult(
        status: process.terminationStatus, output: try String(contentsOf: out, encoding: .utf8),
        error: try String(contentsOf: err, encoding: .utf8))
}

/// A child process started with posix_spawn, for programs that close the descriptors they
/// inherit (systemd-socket-activate does): Foundation's Process watches a descriptor it passes to
/// the child, takes its closing for the child's exit, and then blocks in waitpid for good.
package final class SpawnedProcess: @unchecked Sendable { // `status` is set by the one task that polls the process.
    package let processIdentifier: pid_t
    package private(set) var status: Int32?

    package init(_ executable: String, _ arguments: [String], environment: [String: String], output: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw CocoaError(.executableLoad) }
        processIdentifier = pid
    }

    /// Whether it still runs (reaping it if it has exited).
    package var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        guard waitpid(processIdentifier, &raw, WNOHANG) == processIdentifier else { return true }
        status = (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
        return false
    }

    /// Waits for the exit; returns the exit status (128 + the signal for a signal).
    package func wait() async throws -> Int32 {
        while isRunning { try await Task.sleep(for: .milliseconds(10)) }
        return status ?? -1
    }

    package func signal(_ signal: Int32) { kill(processIdentifier, signal) }
}
