#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelTesting
import SystemdHarness
import Testing

extension ModelctlTests {
    /// Shell completions and the manual page list every command; the page renders with groff.
    @Test func completionsAndTheManualComeFromTheCommands() async throws {
        try await CLITestbed.with { bed in
            let commands = [
                "status", "store", "schema", "insert", "get", "update", "delete", "fetch", "count", "aggregate",
                "history", "import", "export", "shell",
            ]
            for shell in ["bash", "zsh", "fish"] {
                let script = try await bed.run(["--generate-completion-script", shell])
                #expect(script.status == 0 && script.output.count > 1_000, "\(shell)")
                for command in commands { #expect(script.output.contains(command), "\(shell): \(command)") }
            }
            let manual = try await bed.run(["manual"])
            #expect(manual.status == 0 && manual.output.hasPrefix(".TH MODELCTL 1"))
            for command in commands { #expect(manual.output.contains(".SS \"modelctl \(command)"), "\(command)") }
            #expect(manual.output.contains("--where <predicate>") && manual.output.contains("EXIT STATUS"))
            let ascii = manual.output.unicodeScalars.allSatisfy { $0.isASCII }
            #expect(ascii)
            // groff comes with man-db, which scripts/test installs.
            let groff = "/usr/bin/groff"
            try #require(FileManager.default.isExecutableFile(atPath: groff), "no \(groff): install man-db")
            let page = try bed.file("modelctl.1", manual.output)
            let rendered = try await run(
                URL(fileURLWithPath: groff), ["-man", "-Tutf8", "-ww", page], in: bed.directory)
            #expect(rendered.status == 0 && rendered.error.isEmpty, "\(rendered.error)")
            #expect(rendered.output.contains("modelctl - Work with the object stores"))
            // Every variable modelctl reads, and no run of spaces inside a sentence of the help.
            for variable in ["MODELD_SOCKET", "MODELD_STORE", "MODELD_TRANSPORT", "MODELCTL_HISTFILE"] {
                #expect(manual.output.contains(".B \(variable)"), "\(variable)")
            }
            #expect(!manual.output.contains("reads  "), "a run of spaces in the exit status text")
        }
    }
}
