import Foundation
import ModelCore
import ModelFixtures
import SystemdHarness
import Testing

/// `modelctl shell` on a terminal (a pseudo-terminal driven by Python's `pty`, which waits for
/// each prompt before it types): the up arrow recalls the last line, Tab completes commands and
/// entity names, Ctrl-R finds an earlier line, and the lines are kept in the history file for the
/// next session.
@Suite struct ShellEditingTests {
    /// Types each step's keys once the prompt has appeared that many times and the line editor has
    /// taken the terminal out of canonical mode (libedit writes the prompt a moment before it does
    /// that, and keys typed in between are the kernel's to edit: a Ctrl-R there reprints the line
    /// rather than searching), then prints all the terminal showed. Exits 3 if a prompt never comes.
    static let driver = #"""
        import os, pty, select, sys, termios, time
        keys = [bytes(k, "utf-8").decode("unicode_escape").encode("latin-1") for k in sys.argv[1].split("|")]
        pid, fd = pty.fork()
        if pid == 0:
            os.execvp(sys.argv[2], sys.argv[2:])
        out = b""
        def read(until):
            global out
            deadline = time.time() + 30
            while out.count(b"modelctl> ") < until:
                ready, _, _ = select.select([fd], [], [], max(0, deadline - time.time()))
                if not ready:
                    sys.stdout.write(out.decode("utf-8", "replace")); sys.exit(3)
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                out += chunk
            while termios.tcgetattr(fd)[3] & termios.ICANON:
                if time.time() > deadline:
                    sys.stdout.write(out.decode("utf-8", "replace")); sys.exit(3)
                time.sleep(0.001)
        for n, step in enumerate(keys, start=1):
            read(n)
            os.write(fd, step)
        _, status = os.waitpid(pid, 0)
        try:
            while True:
                chunk = os.read(fd, 4096)
                if not chunk: break
                out += chunk
        except OSError:
            pass
        sys.stdout.write(out.decode("utf-8", "replace"))
        sys.exit(os.WEXITSTATUS(status))
        """#

    @Test func linesAreEditedRecalledCompletedAndRemembered() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("trips.json", SampleTrips.schema.canonicalJSON())])
                    .status == 0)
            let driver = try bed.file("drive.py", Self.driver)
            let history = bed.directory.appendingPathComponent("history").path
            func shell(_ keys: [String]) async throws -> CommandResult {
                try await SystemdHarness.run(
                    URL(fileURLWithPath: "/usr/bin/env"),
                    [
                        "MODELCTL_HISTFILE=\(history)", "TERM=xterm", "python3", driver, keys.joined(separator: "|"),
                        bed.modelctl.path, "--socket", bed.daemon.socketPath, "shell", "--format", "jsonl",
                    ],
                    in: bed.directory)
            }
            let first = try await shell([
                "insert Trip name=Kyoto destination=Japan startDate=2026-04-01 endDate=2026-04-09\\r",
                // Up arrow: the insert again, with its name changed at the end of the line... as typed.
                "\\x1b[A\\x7f\\x7f\\x7f\\x7f\\x7f\\x7f\\x7f\\x7f\\x7f\\x7f2026-04-10\\r",
                // Tab completes the command and the entity name.
                "cou\\tTr\\t\\r",
                "save\\r",
                "quit\\r",
            ])
            #expect(first.status == 0, "\(first)")
            #expect(first.output.contains("{\"count\":2}"), "\(first.output)")
            let saved = try await bed.run(["fetch", "Trip", "--sort", "endDate", "--format", "jsonl"])
            #expect(
                saved.objects.compactMap { $0["endDate"] as? String }.map { String($0.prefix(10)) } == [
                    "2026-04-09", "2026-04-10",
                ], "\(saved)")

            // The next session finds the lines in the history file; Ctrl-R searches them.
            let kept = try String(contentsOfFile: history, encoding: .utf8)
            // libedit's file escapes spaces (as \040): the completed line is there, whole.
            let lines = kept.replacingOccurrences(of: "\\040", with: " ")
            #expect(lines.contains("count Trip ") && lines.contains("endDate=2026-04-10"), "\(kept)")
            let second = try await shell(["\\x12cou\\r", "quit\\r"])
            #expect(second.status == 0 && second.output.contains("{\"count\":2}"), "\(second)")
        }
    }
}
