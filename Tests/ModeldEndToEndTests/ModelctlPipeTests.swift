#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelTesting
import SystemdHarness
import Testing

/// What reads modelctl's output stopping early (`| head -1`) ends modelctl as it ends other
/// tools: by SIGPIPE, quietly. It crashed on a forced `try`, printing a backtrace for seconds.
@Suite struct ModelctlPipeTests {
    @Test(.timeLimit(.minutes(2)))
    func aReaderThatStopsEndsModelctlBySIGPIPE() async throws {
        try await Self.withCatalog { bed in
            #expect(try await bed.run(["insert", "Library", "name=first"]).status == 0)
            let output = PipedModelctl.pipe()
            let run = try PipedModelctl(
                bed, ["--store", "default", "fetch", "Library", "--format", "jsonl", "--watch"], output: output)
            defer { run.stop() }

            // The first result, then the reader goes (as `head -1` does once it has its line).
            var first = Data()
            while !first.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                first += chunk
            }
            #expect(String(decoding: first, as: UTF8.self).contains("first"))
            try output.fileHandleForReading.close()

            // The next change is written to no reader.
            #expect(try await bed.run(["insert", "Library", "name=second"]).status == 0)
            // Its end, or the test's time limit (which ends the wait, cancelled).
            try await run.expectEndedQuietlyBySIGPIPE()
        }
    }

    /// A backup written to standard output ends the same way when its reader is gone (it said
    /// "cannot write -: Broken pipe" and exited 1).
    @Test(.timeLimit(.minutes(2)))
    func aBackupToAReaderThatIsGoneEndsBySIGPIPE() async throws {
        try await Self.withCatalog { bed in
            let output = PipedModelctl.pipe()
            // The reader is gone before the first byte is written.
            try output.fileHandleForReading.close()
            let run = try PipedModelctl(bed, ["store", "backup", "default", "-"], output: output)
            defer { run.stop() }
            try await run.expectEndedQuietlyBySIGPIPE()
        }
    }
}

extension ModelctlPipeTests {
    /// Runs `body` with a testbed whose default store has the catalog's schema.
    fileprivate static func withCatalog(_ body: (CLITestbed) async throws -> Void) async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("catalog.json", Catalog.schema.canonicalJSON())])
                    .status == 0)
            try await body(bed)
        }
    }
}

/// modelctl run against a testbed's daemon with its standard output on `output` and its
/// standard error kept in a file, for the tests of how it ends when its reader goes.
private struct PipedModelctl {
    let process = Process()
    let errors: URL
    let ended: AsyncStream<Void>
    /// The pipe's identity (its inode), to name whoever still holds its reading end.
    let pipeInode: UInt64

    /// A pipe whose ends no other child of this process inherits: the test process starts
    /// processes from many threads, and Foundation closes in each child only the descriptors open
    /// when it looked, so a pipe made meanwhile could stay open in a child that lives on (a
    /// daemon of another test), and that reader keeps modelctl's writes from failing.
    static func pipe() -> Pipe {
        let pipe = Pipe()
        for handle in [pipe.fileHandleForReading, pipe.fileHandleForWriting] {
            _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
        }
        return pipe
    }

    init(_ bed: CLITestbed, _ arguments: [String], output: Pipe) throws {
        errors = bed.directory.appendingPathComponent("modelctl-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.executableURL = bed.modelctl
        process.arguments = ["--socket", bed.daemon.socketPath] + arguments
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errors)
        var status = stat()
        pipeInode = fstat(output.fileHandleForReading.fileDescriptor, &status) == 0 ? UInt64(status.st_ino) : 0
        let (ended, end) = AsyncStream<Void>.makeStream()
        self.ended = ended
        process.terminationHandler = { _ in end.finish() }
        try process.run()
    }

    /// Waits for modelctl's end (or the test's time limit), which must be SIGPIPE's, with
    /// nothing said on standard error.
    func expectEndedQuietlyBySIGPIPE() async throws {
        for await _ in ended {}
        guard !process.isRunning else {
            Issue.record("modelctl is still running; other processes with an end of its output pipe open: \(holders())")
            return
        }
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGPIPE)
        let said = try String(contentsOf: errors, encoding: .utf8)
        #expect(said.isEmpty, "\(said)")
    }

    /// The processes other than modelctl holding an end of the pipe: a reader among them keeps
    /// modelctl's writes from failing; "none" says modelctl was not told of a change, or wrote
    /// without failing.
    func holders() -> String {
        let link = "pipe:[\(pipeInode)]"
        let holders = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { pid in
            guard Int32(pid) != nil, Int32(pid) != process.processIdentifier else { return false }
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            return descriptors.contains {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == link
            }
        }
        let named = holders.map { pid in
            let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            return "\(pid) (\(command.replacingOccurrences(of: "\0", with: " ").prefix(120)))"
        }
        return named.isEmpty ? "none" : named.joined(separator: ", ")
    }

    func stop() {
        if process.isRunning { process.terminate() }
    }
}
