import Foundation
import ModelCore
import ModelFixtures
import ModelTesting
import SystemdHarness
import Testing

/// `modelctl fetch|count|aggregate --watch`, piped: the result, then one JSON line per change.
@Suite struct ModelctlWatchTests {
    /// Starts `modelctl` with `arguments`, its output going to a file; returns the process and file.
    private func watcher(_ bed: CLITestbed, _ arguments: [String], name: String) throws -> (Process, URL) {
        let output = bed.directory.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        process.executableURL = bed.modelctl
        process.arguments = ["--socket", bed.daemon.socketPath, "--store", "default"] + arguments
        process.standardOutput = try FileHandle(forWritingTo: output)
        try process.run()
        return (process, output)
    }

    /// The JSON lines written so far, once there are at least `count`.
    private func lines(_ file: URL, atLeast count: Int) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let text = try String(contentsOf: file, encoding: .utf8)
            let lines = text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            if lines.count >= count || ContinuousClock.now >= deadline { return lines }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func aWatchedFetchPrintsEachChangeAsAJSONLine() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("catalog.json", Catalog.schema.canonicalJSON())])
                    .status == 0)
            #expect(try await bed.run(["insert", "Library", "name=b"]).status == 0)
            let (fetch, fetched) = try watcher(
                bed, ["fetch", "Library", "--sort", "name", "--watch"], name: "fetch.out")
            let (count, counted) = try watcher(bed, ["count", "Library", "--watch"], name: "count.out")
            let (groups, grouped) = try watcher(
                bed, ["aggregate", "Library", "--group-by", "name", "--count", "--watch"], name: "groups.out")
            defer { for process in [fetch, count, groups] where process.isRunning { process.terminate() } }

            let first = try await lines(fetched, atLeast: 1)
            #expect(first.first?["token"] as? Int == 1)
            #expect((first.first?["objects"] as? [[String: Any]])?.map { $0["name"] as? String } == ["b"])
            #expect(try await lines(counted, atLeast: 1).first?["count"] as? Int == 1)
            _ = try await lines(grouped, atLeast: 1)

            #expect(try await bed.run(["insert", "Library", "name=a"]).status == 0)
            let second = try await lines(fetched, atLeast: 2)
            #expect(second.count == 2)
            let change = try #require(second.last)
            #expect(change["token"] as? Int == 2)
            let inserted = try #require(change["inserted"] as? [[String: Any]])
            #expect(inserted.first?["offset"] as? Int == 0)
            #expect((inserted.first?["object"] as? [String: Any])?["name"] as? String == "a")
            #expect((change["deleted"] as? [Any])?.isEmpty == true)
            #expect(try await lines(counted, atLeast: 2).last?["count"] as? Int == 2)
            let rows = try #require(try await lines(grouped, atLeast: 2).last?["groups"] as? [[String: Any]])
            #expect(rows.map { $0["name"] as? String } == ["a", "b"])
            #expect(rows.map { $0["count"] as? Int } == [1, 1])
            for process in [fetch, count, groups] { #expect(process.isRunning, "a watch runs until stopped") }
        }
    }

    /// On a terminal (a pseudo-terminal made by util-linux's `script`), the table is redrawn in
    /// place: the screen cleared and the whole table drawn again for each change.
    @Test func onATerminalTheTableIsRedrawn() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("catalog.json", Catalog.schema.canonicalJSON())])
                    .status == 0)
            #expect(try await bed.run(["insert", "Library", "name=Kyoto"]).status == 0)
            let output = bed.directory.appendingPathComponent("terminal.out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            let command = [
                bed.modelctl.path, "--socket", bed.daemon.socketPath, "--store", "default", "fetch",
                "Library", "--sort", "name", "--watch",
            ].joined(separator: " ")
            let terminal = Process()
            terminal.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            terminal.arguments = ["-qfc", command, output.path]
            terminal.standardInput = FileHandle.nullDevice
            terminal.standardOutput = FileHandle.nullDevice
            terminal.standardError = FileHandle.nullDevice
            try terminal.run()
            defer { if terminal.isRunning { terminal.terminate() } }
            _ = try await ModelctlTests.waitForOutput(output, containing: "Kyoto")
            #expect(try await bed.run(["insert", "Library", "name=Bologna"]).status == 0)
            let seen = try await ModelctlTests.waitForOutput(output, containing: "Bologna")
            let clear = "\u{1B}[H\u{1B}[2J"
            #expect(seen.components(separatedBy: clear).count - 1 == 2, "\(seen.debugDescription)")
            let lastDrawing = try #require(seen.components(separatedBy: clear).last)
            #expect(lastDrawing.contains("token 2"))
            // The new table has both rows, in the fetch's order.
            let bologna = try #require(lastDrawing.range(of: "Bologna")),
                kyoto = try #require(lastDrawing.range(of: "Kyoto"))
            #expect(bologna.lowerBound < kyoto.lowerBound)
        }
    }
}
