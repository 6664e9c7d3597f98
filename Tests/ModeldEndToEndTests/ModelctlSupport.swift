import Foundation
import ModelCore
import ModelTesting
import SystemdHarness

/// A modeld for one test, and the built modelctl pointed at it.
struct CLITestbed {
    let daemon: ModeldProcess
    let modelctl: URL

    /// Runs `body` with a fresh daemon, removed afterwards whether `body` succeeds or throws.
    static func with(_ arguments: [String] = [], _ body: (CLITestbed) async throws -> Void) async throws {
        let daemon = try await ModeldProcess.launch(arguments: arguments)
        let bed = CLITestbed(
            daemon: daemon, modelctl: daemon.executable.deletingLastPathComponent().appendingPathComponent("modelctl"))
        do {
            try await body(bed)
        } catch {
            await bed.stop()
            throw error
        }
        await bed.stop()
    }

    var directory: URL { daemon.directory }

    /// Runs modelctl with `arguments` (after `--socket`), with `input` on standard input.
    func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) async throws
        -> CommandResult
    {
        var env = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        env["MODELD_SOCKET"] = daemon.socketPath
        env["MODELD_STORE"] = env["MODELD_STORE"] ?? "default"
        guard let input else {
            return try await SystemdHarness.run(modelctl, arguments, environment: env, in: directory)
        }
        let file = directory.appendingPathComponent("stdin-\(UUID().uuidString.prefix(8))")
        try input.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try await SystemdHarness.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "exec \"$0\" \"$@\" < \"\(file.path)\"", modelctl.path] + arguments,
            environment: env, in: directory)
    }

    /// Writes `text` to a file in the testbed's directory; returns its path.
    func file(_ name: String, _ text: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    func stop() async {
        await daemon.remove()
    }
}

extension CommandResult {
    /// Standard output as JSON Lines.
    var lines: [String] { output.split(whereSeparator: \.isNewline).map(String.init) }

    /// Standard output parsed as JSON.
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(output.utf8), options: [.fragmentsAllowed]) }

    /// Standard output as JSON Lines, each parsed.
    var objects: [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}
