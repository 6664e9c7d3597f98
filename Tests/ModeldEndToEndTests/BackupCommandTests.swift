import Foundation
import ModelCore
import ModelFixtures
import SystemdHarness
import Testing

/// `modelctl store backup` and `store restore` against the spawned modeld: the file written is
/// what the restore takes back; a bad path, a full disk (/dev/full), a corrupt file and a taken
/// name each fail with a message and an exit code, leave no partial file, and make nothing.
@Suite struct BackupCommandTests {
    @Test func aBackupWrittenByModelctlIsRestoredByIt() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("trips.json", SampleTrips.schema.canonicalJSON())])
                    .status == 0)
            for (name, start) in [("Kyoto", "2026-04-01"), ("Rome", "2026-05-01")] {
                let inserted = try await bed.run([
                    "insert", "Trip", "name=\(name)", "destination=X", "startDate=\(start)", "endDate=\(start)",
                ])
                #expect(inserted.status == 0, "\(inserted)")
            }
            let file = bed.directory.appendingPathComponent("default.backup").path
            let backup = try await bed.run(["store", "backup", "default", file, "--format", "json"])
            #expect(backup.status == 0, "\(backup)")
            let summary = try #require(backup.json as? [String: Any])
            #expect(summary["history_token"] as? Int == 2) // the two saves
            let size = try #require(summary["bytes"] as? Int)
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int == size)

            // A later save is not in it; the copy, under a new identity, has what was saved before.
            #expect(
                try await bed.run([
                    "insert", "Trip", "name=Oslo", "destination=X", "startDate=2026-06-01", "endDate=2026-06-01",
                ]).status == 0)
            let restored = try await bed.run(["store", "restore", file, "copy", "--new-identity", "--format", "json"])
            #expect(restored.status == 0, "\(restored)")
            let info = try #require(restored.json as? [String: Any])
            #expect(info["history_token"] as? Int == 2 && info["uuid"] as? String != summary["uuid"] as? String)
            let names = try await bed.run(["--store", "copy", "fetch", "Trip", "--sort", "name", "--format", "jsonl"])
            #expect(names.objects.map { $0["name"] as? String } == ["Kyoto", "Rome"], "\(names)")

            // Over the store itself: the later save is gone, the URIs are the store's own again.
            let replaced = try await bed.run(["store", "restore", file, "default", "--replace", "--format", "json"])
            #expect((replaced.json as? [String: Any])?["uuid"] as? String == summary["uuid"] as? String, "\(replaced)")
            let after = try await bed.run(["fetch", "Trip", "--sort", "name", "--format", "jsonl"])
            #expect(after.objects.map { $0["name"] as? String } == ["Kyoto", "Rome"], "\(after)")
        }
    }

    /// `-` writes the backup to standard output and nothing else there: the summary goes to
    /// standard error, so that `store backup NAME - | zstd > file` keeps a sound file.
    @Test func aBackupToStandardOutputIsTheFileAlone() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("trips.json", SampleTrips.schema.canonicalJSON())])
                    .status == 0)
            #expect(
                try await bed.run([
                    "insert", "Trip", "name=Kyoto", "destination=X", "startDate=2026-04-01", "endDate=2026-04-01",
                ]).status == 0)
            let file = bed.directory.appendingPathComponent("piped.backup")
            let summary = bed.directory.appendingPathComponent("piped.summary")
            let piped = try await SystemdHarness.run(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", "\"$0\" store backup default - --format json > \"$1\" 2> \"$2\"", bed.modelctl.path,
                    file.path, summary.path,
                ],
                environment: ProcessInfo.processInfo.environment.merging(["MODELD_SOCKET": bed.daemon.socketPath]) {
                    _, new in new
                }, in: bed.directory)
            #expect(piped.status == 0, "\(piped) \((try? String(contentsOf: summary, encoding: .utf8)) ?? "")")
            let info = try JSONSerialization.jsonObject(with: Data(contentsOf: summary)) as? [String: Any]
            let bytes = try Data(contentsOf: file)
            #expect(
                info?["bytes"] as? Int == bytes.count && info?["file"] as? String == "-", "\(String(describing: info))")
            #expect(bytes.starts(with: Array("SQLite format 3\0".utf8)))
            let restored = try await bed.run(["store", "restore", file.path, "copy", "--new-identity"])
            #expect(restored.status == 0, "\(restored)")
            let names = try await bed.run(["--store", "copy", "fetch", "Trip", "--format", "jsonl"])
            #expect(names.objects.map { $0["name"] as? String } == ["Kyoto"], "\(names)")
        }
    }

    @Test func badPathsFullDisksCorruptFilesAndTakenNamesFailClearly() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("trips.json", SampleTrips.schema.canonicalJSON())])
                    .status == 0)
            let full = try await bed.run(["store", "backup", "default", "/dev/full"])
            #expect(full.status == 1 && full.error.contains("No space left on device"), "\(full)")
            let missing = try await bed.run(["store", "backup", "default", "/nonexistent/dir/x.backup"])
            #expect(
                missing.status == 1 && missing.error.contains("cannot write /nonexistent/dir/x.backup"), "\(missing)")
            let unknown = try await bed.run([
                "store", "backup", "nowhere", bed.directory.appendingPathComponent("n").path,
            ])
            #expect(unknown.status == 66 && unknown.error.contains("no store named 'nowhere'"), "\(unknown)")
            // A failed backup leaves no file, and an older one at the path untouched.
            #expect(!FileManager.default.fileExists(atPath: bed.directory.appendingPathComponent("n").path))
            let file = bed.directory.appendingPathComponent("good.backup").path
            #expect(try await bed.run(["store", "backup", "default", file]).status == 0)
            let good = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(try await bed.run(["store", "backup", "nowhere", file]).status == 66)
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == good)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: bed.directory.path).filter {
                $0.contains(".partial-")
            }
            #expect(leftovers.isEmpty, "\(leftovers)")

            var corrupt = good
            corrupt.replaceSubrange(4096..<8192, with: Data(repeating: 0x5A, count: 4096))
            let corruptFile = bed.directory.appendingPathComponent("corrupt.backup")
            try corrupt.write(to: corruptFile)
            let refused = try await bed.run(["store", "restore", corruptFile.path, "broken"])
            #expect(refused.status == 64 && refused.error.contains("not a sound modeld backup"), "\(refused)")
            let taken = try await bed.run(["store", "restore", file, "default"])
            #expect(taken.status == 75 && taken.error.contains("already exists"), "\(taken)")
            let absent = try await bed.run(["store", "restore", "/nonexistent/backup", "other"])
            #expect(absent.status == 66 && absent.error.contains("no such file"), "\(absent)")
            let directory = try await bed.run(["store", "restore", bed.directory.path, "other"])
            #expect(directory.status == 1 && directory.error.contains("it is a directory"), "\(directory)")
            let list = try await bed.run(["store", "list", "--format", "jsonl"])
            #expect(list.objects.map { $0["name"] as? String } == ["default"])
        }
    }
}
