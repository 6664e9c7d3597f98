import Foundation
import ModelTesting

/// What a finished command printed and how it ended.
struct CommandResult {
    var status: Int32
    var output: String
    var error: String
}

/// Runs `executable` with `arguments` to completion, its output going to files (so that a full
/// pipe never blocks it), and returns what it printed.
func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, in directory: URL) throws -> CommandResult {
    let id = UUID().uuidString.prefix(8)
    let out = directory.appendingPathComponent("out-\(id)"), err = directory.appendingPathComponent("err-\(id)")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    try process.run()
    process.waitUntilExit()
    defer {
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.removeItem(at: err)
    }
    return CommandResult(status: process.terminationStatus, output: try String(contentsOf: out, encoding: .utf8),
                         error: try String(contentsOf: err, encoding: .utf8))
}

/// The built modeld.
func modeldExecutable() throws -> URL {
    guard let url = ModeldProcess.locateExecutable() else { throw CocoaError(.fileNoSuchFile) }
    return url
}
