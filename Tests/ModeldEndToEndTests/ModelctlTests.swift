#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelTesting
import SystemdHarness
import Testing

/// The built modelctl against a real modeld: every subcommand, its output and exit code.
@Suite struct ModelctlTests {
    @Test func statusAndStores() async throws {
        try await CLITestbed.with { bed in
            let status = try await bed.run(["status", "--format", "json"])
            #expect(status.status == 0, "\(status)")
            let object = try #require(status.json as? [String: Any])
            #expect(object["health"] as? String == "serving" && object["version"] as? String == "0.1.0")
            #expect(
                object["stores"] as? [String] == ["default"] && object["socket"] as? String == bed.daemon.socketPath)

            #expect(try await bed.run(["store", "create", "scratch", "--memory", "--format", "json"]).status == 0)
            let list = try await bed.run(["store", "list", "--format", "jsonl"])
            #expect(list.objects.map { $0["name"] as? String } == ["default", "scratch"])
            #expect(list.objects.last?["kind"] as? String == "memory")
            let info = try await bed.run(["store", "info", "scratch", "--format", "json"])
            #expect((info.json as? [String: Any])?["kind"] as? String == "memory")
            let table = try await bed.run(["store", "list", "--format", "table"])
            #expect(table.lines.first?.hasPrefix("name ") == true && table.lines.count == 4, "\(table.output)")
            let dropped = try await bed.run(["store", "drop", "scratch"])
            #expect(dropped.status == 0 && dropped.error.contains("dropped store 'scratch'"))
            let gone = try await bed.run(["store", "info", "scratch"])
            #expect(
                gone.status == 66
                    && gone.error == "modelctl: no store named 'scratch'; list the stores, or create it first\n",
                "\(gone)")
        }
    }

    /// An entity renamed in the schema's JSON (`originalName`) keeps its objects over the daemon,
    /// and its old name is refused saying what it became.
    @Test func anEntityRenamedByOriginalNameKeepsItsObjects() async throws {
        try await CLITestbed.with { bed in
            let notes = try bed.file(
                "notes.json", #"{"entities": [{"name": "Note", "attributes": [{"name": "text", "type": "string"}]}]}"#)
            #expect(try await bed.run(["schema", "apply", notes]).status == 0)
            let inserted = try await bed.run(["insert", "Note", "text=kept", "--format", "jsonl"])
            let uri = try #require(inserted.objects.first?["uri"] as? String, "\(inserted)")
            let memos = try bed.file(
                "memos.json",
                #"{"entities": [{"name": "Memo", "originalName": "Note", "attributes": [{"name": "body", "originalName": "text", "type": "string"}]}]}"#
            )
            let diff = try await bed.run(["schema", "diff", memos, "--format", "csv"])
            #expect(diff.status == 0 && !diff.output.contains("removeEntity"), "\(diff)")
            #expect(try await bed.run(["schema", "apply", memos]).status == 0)
            let fetched = try await bed.run(["fetch", "Memo", "--format", "jsonl"])
            #expect(fetched.objects.map { $0["body"] as? String } == ["kept"], "\(fetched)")
            #expect(fetched.objects.first?["uri"] as? String == uri.replacingOccurrences(of: "/Note/", with: "/Memo/"))
            let old = try await bed.run(["fetch", "Note"])
            #expect(old.status != 0 && old.error.contains("renamed to 'Memo'"), "\(old)")
        }
    }

    @Test func schemasAreShownAppliedAndRefusedWithTheirDifferences() async throws {
        try await CLITestbed.with { bed in
            let file = try bed.file("trips.json", SampleTrips.schema.canonicalJSON())
            let applied = try await bed.run(["schema", "apply", file])
            #expect(
                applied.status == 0 && applied.error.contains("applied the schema to 'default' (5 entities"),
                "\(applied)")
            let shown = try await bed.run(["schema", "show"])
            #expect(shown.output == SampleTrips.schema.canonicalJSON() + "\n")
            #expect(
                try await bed.run([
                    "insert", "Trip", "name=Kyoto", "destination=Japan", "startDate=2026-04-01", "endDate=2026-04-09",
                ]).status == 0)

            var changed = SampleTrips.schema
            changed.entities[0].attributes.append(
                AttributeDescription(name: "budget", type: .decimal, isOptional: true))
            let changedFile = try bed.file("changed.json", changed.canonicalJSON())
            let diff = try await bed.run(["schema", "diff", changedFile, "--format", "csv"])
            #expect(diff.status == 0 && diff.lines.count == 2, "\(diff)")
            #expect(diff.lines.last?.hasPrefix("Trip,addAttribute,1,false,add budget (decimal?)") == true, "\(diff)")
            let migrated = try await bed.run(["schema", "apply", changedFile, "--author", "cli"])
            #expect(migrated.status == 0 && migrated.error.contains("migrated 'default' from version"), "\(migrated)")
            let log = try await bed.run(["schema", "log", "--format", "jsonl"])
            #expect(log.objects.map { $0["author"] as? String } == ["cli"], "\(log)")
            #expect(log.objects.first?["to"] as? String == changed.versionHash, "\(log)")
            var retyped = changed
            retyped.entities[0].attributes[0].type = .int
            let retypedFile = try bed.file("retyped.json", retyped.canonicalJSON())
            let refused = try await bed.run(["schema", "apply", retypedFile])
            #expect(refused.status == 75 && refused.error.contains("staged migration"), "\(refused)")
            let refusedDiff = try await bed.run(["schema", "diff", retypedFile])
            #expect(refusedDiff.status == 75 && refusedDiff.output.contains("refused"), "\(refusedDiff)")
            let refusedDryRun = try await bed.run(["schema", "apply", retypedFile, "--dry-run"])
            #expect(
                refusedDryRun.status == 75 && refusedDryRun.error.contains("would be refused"), "\(refusedDryRun)")
            let broken = try await bed.run([
                "schema", "apply",
                try bed.file("broken.json", "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\"}]}]}"),
            ])
            #expect(broken.status == 64 && broken.error.hasPrefix("modelctl: "), "\(broken)")
        }
    }

    @Test func objectsAreInsertedReadUpdatedAndDeletedWithCascades() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("trips.json", SampleTrips.schema.canonicalJSON())])
                    .status == 0)
            let inserted = try await bed.run([
                "insert", "Trip", "name=Rome", "destination=Italy", "startDate=2026-04-01", "endDate=2026-04-02",
                "--format", "jsonl",
            ])
            let trip = try #require(inserted.objects.first?["uri"] as? String, "\(inserted)")
            #expect(trip.hasSuffix("/Trip/p1"))
            let items = try await bed.run([
                "insert", "BucketListItem", "--json",
                "[{\"title\": \"Colosseum\", \"details\": \"\", \"trip\": \"\(trip)\"}, {\"title\": \"Forum\", \"details\": \"x\", \"trip\": \"\(trip)\"}]",
                "--format", "jsonl",
            ])
            #expect(items.objects.count == 2, "\(items)")

            let got = try await bed.run(["get", trip, "--format", "json"])
            let object = try #require(got.json as? [String: Any], "\(got)")
            #expect(
                object["name"] as? String == "Rome" && object["startDate"] as? String == "2026-04-01T00:00:00.000000Z")
            #expect((object["bucketList"] as? [String])?.count == 2)

            #expect(
                try await bed.run(["update", trip, "destination=Lazio", "note:=null"]).status == 64,
                "note is not an attribute")
            let updated = try await bed.run(["update", trip, "destination=Lazio"])
            #expect(updated.status == 0, "\(updated)")
            #expect(
                (try await bed.run(["get", trip, "--format", "json"]).json as? [String: Any])?["destination"] as? String
                    == "Lazio")

            let deleted = try await bed.run(["delete", trip, "--format", "jsonl"])
            #expect(deleted.status == 0)
            #expect(
                deleted.objects.map { $0["deleted"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") } == [
                    "as asked", "by cascade", "by cascade",
                ], "\(deleted)")
            let missing = try await bed.run(["get", trip])
            #expect(missing.status == 66 && missing.error.contains("no object \(trip)"), "\(missing)")
        }
    }

    @Test func fetchCountAndAggregateInEveryFormat() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("articles.json", Articles.schema.canonicalJSON())])
                    .status == 0)
            var students = ""
            var expected: [Int: Int] = [:]
            for i in 0..<60 {
                let year = 1990 + (i * 7) % 9
                expected[year, default: 0] += 1
                students += "{\"name\": \"s\(i)\", \"birthOfYear\": \(year)}\n"
            }
            let imported = try await bed.run(["import", "Student", try bed.file("students.jsonl", students)])
            #expect(imported.status == 0 && imported.error.contains("imported 60 objects"), "\(imported)")

            let fetched = try await bed.run([
                "fetch", "Student", "--where", "birthOfYear >= 1995", "--sort", "-birthOfYear,name", "--limit", "5",
                "--offset", "1",
                "--fields", "name,birthOfYear", "--format", "jsonl",
            ])
            let all = (0..<60).map { (name: "s\($0)", year: 1990 + ($0 * 7) % 9) }.filter { $0.year >= 1995 }
                .sorted { ($0.year, $1.name) > ($1.year, $0.name) }
            #expect(
                fetched.objects.map { $0["name"] as? String } == Array(all.dropFirst().prefix(5)).map { $0.name },
                "\(fetched)")
            #expect(fetched.objects.first?.keys.sorted() == ["birthOfYear", "name", "uri", "version"])

            let csv = try await bed.run([
                "fetch", "Student", "--where", "name == \"s0\"", "--fields", "name,birthOfYear", "--format", "csv",
            ])
            #expect(csv.lines.first == "uri,version,name,birthOfYear" && csv.lines.count == 2, "\(csv.output)")
            let table = try await bed.run(["fetch", "Student", "--where", "name == \"s0\"", "--format", "table"])
            #expect(
                table.lines.count == 3 && table.lines[0].contains("name") && table.lines[1].hasPrefix("---"),
                "\(table.output)")
            let json = try await bed.run(["fetch", "Student", "--limit", "2", "--format", "json"])
            #expect((json.json as? [[String: Any]])?.count == 2)

            #expect(
                try await bed.run(["count", "Student", "--where", "birthOfYear == 1990", "--format", "table"]).output
                    == "\(expected[1990]!)\n")
            let grouped = try await bed.run([
                "aggregate", "Student", "--group-by", "birthOfYear", "--count", "--min", "name", "--sort",
                "-count,birthOfYear", "--format", "jsonl",
            ])
            let pairs = grouped.objects.map { ($0["birthOfYear"] as? Int ?? 0, $0["count"] as? Int ?? 0) }
            #expect(Dictionary(uniqueKeysWithValues: pairs) == expected, "\(grouped)")
            #expect(pairs.map(\.1) == pairs.map(\.1).sorted(by: >))
        }
    }

    @Test func historyAfterATokenByAuthorAndFollowed() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("catalog.json", Catalog.schema.canonicalJSON())])
                    .status == 0)
            for (name, author) in [("a", "ann"), ("b", "bob"), ("c", "ann")] {
                #expect(try await bed.run(["insert", "Library", "name=\(name)", "--author", author]).status == 0)
            }
            let after = try await bed.run(["history", "--after", "1", "--format", "jsonl"])
            #expect(after.objects.map { $0["token"] as? Int } == [2, 3])
            #expect(after.objects.map { $0["author"] as? String } == ["bob", "ann"])
            let byAnn = try await bed.run(["history", "--author", "ann", "--format", "csv"])
            #expect(
                byAnn.lines.count == 3 && byAnn.lines[0].hasPrefix("token,timestamp,author,user,kind,uri"),
                "\(byAnn.output)"
            )
            // Pruning: a token past the latest is refused, and deletes nothing; so are no bound and a bad date.
            let past = try await bed.run(["history", "prune", "--through", "9"])
            #expect(past.status != 0 && past.error.contains("past the store's latest"), "\(past.error)")
            #expect(try await bed.run(["history", "prune"]).status != 0)
            let badDate = try await bed.run(["history", "prune", "--before", "yesterday"])
            #expect(badDate.status != 0 && badDate.error.contains("is not a date"), "\(badDate.error)")
            #expect(try await bed.run(["history", "--format", "jsonl"]).objects.count == 3)
            // What prune did is said on standard error, as other commands' reports are: standard
            // output (JSON here) holds no plain text.
            let pruned = try await bed.run(["history", "prune", "--through", "1", "--format", "json"])
            #expect(pruned.status == 0 && pruned.error.contains("through token 1"), "\(pruned.output)\(pruned.error)")
            #expect(pruned.output.isEmpty, "\(pruned.output)")
            #expect(try await bed.run(["history", "--format", "jsonl"]).objects.map { $0["token"] as? Int } == [2, 3])
            // Reading after a deleted token is an error that says so, not a gap.
            let expired = try await bed.run(["history", "--after", "0"])
            #expect(expired.status != 0 && expired.error.contains("was deleted"), "\(expired.error)")
            let nothingOld = try await bed.run(["history", "prune", "--before", "2000-01-01"])
            #expect(nothingOld.error.contains("no history was saved before 2000-01-01"), "\(nothingOld)")
            let zero = try await bed.run(["history", "prune", "--through", "0"])
            #expect(zero.status == 64 && zero.error.contains("1 or more"), "\(zero.error)")
            // A date and time is taken whole, never cut to its day: no zone is UTC, fractions count.
            let cut = try await bed.run(["history", "prune", "--before", "2999-01-01T00:00"])
            #expect(cut.status == 64 && cut.error.contains("is not a date"), "\(cut.error)")
            let all = try await bed.run(["history", "prune", "--before", "2999-01-01T00:00:00.5"])
            #expect(all.error.contains("through token 3"), "\(all.output)\(all.error)")
            #expect(try await bed.run(["history", "--format", "jsonl"]).objects.isEmpty)

            // --follow prints saves as they happen, until stopped.
            let output = bed.directory.appendingPathComponent("follow.out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            let follower = Process()
            follower.executableURL = bed.modelctl
            follower.arguments = [
                "--socket", bed.daemon.socketPath, "history", "--after", "3", "--follow", "--format", "jsonl",
            ]
            follower.standardOutput = try FileHandle(forWritingTo: output)
            try follower.run()
            defer { if follower.isRunning { kill(follower.processIdentifier, SIGKILL) } }
            // The first save may reach it as history or live; the second, saved once the first
            // has been printed, reaches a follower that is following.
            #expect(try await bed.run(["insert", "Library", "name=d", "--author", "dan"]).status == 0)
            var seen = try await Self.waitForOutput(output, containing: "\"author\":\"dan\"")
            #expect(seen.contains("\"token\":4"), "\(seen)")
            #expect(try await bed.run(["insert", "Library", "name=e", "--author", "eve"]).status == 0)
            seen = try await Self.waitForOutput(output, containing: "\"author\":\"eve\"")
            #expect(seen.contains("\"token\":5"), "\(seen)")
            #expect(follower.isRunning, "a follower keeps going until stopped")
            kill(follower.processIdentifier, SIGINT)
            while follower.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    @Test func theShellStagesFetchesSavesAndRollsBack() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("catalog.json", Catalog.schema.canonicalJSON())])
                    .status == 0)
            let script = """
                insert Library name="Central Library"
                insert Library name=Annex
                count Library
                fetch Library --sort -name where name BEGINSWITH "C"
                pending
                rollback
                count Library
                insert Library name=Kept
                save
                """
            let shell = try await bed.run(["shell", "--author", "shell-user"], input: script + "\n")
            #expect(shell.status == 0, "\(shell)")
            let lines = shell.objects
            #expect(lines.filter { $0["count"] != nil }.map { $0["count"] as? Int } == [2, 0], "\(shell.output)")
            #expect(lines.contains { $0["name"] as? String == "Central Library" })
            #expect(lines.filter { $0["change"] as? String == "insert" }.count == 2)
            #expect(
                shell.error.contains("discarded 2 change(s)") && shell.error.contains("saved (history token 1)"),
                "\(shell.error)")
            let stored = try await bed.run(["fetch", "Library", "--format", "jsonl"])
            #expect(stored.objects.map { $0["name"] as? String } == ["Kept"])
            #expect(
                try await bed.run(["history", "--format", "jsonl"]).objects.first?["author"] as? String == "shell-user")

            // Mistakes are reported and the shell goes on; leaving discards what was not saved.
            let mistakes = try await bed.run(["shell"], input: "insert Library name=Lost\nfrobnicate\nfetch Nowhere\n")
            #expect(mistakes.status == 64, "the last mistake's class")
            #expect(
                mistakes.error.contains("unknown command 'frobnicate'")
                    && mistakes.error.contains("unknown entity 'Nowhere'"), "\(mistakes.error)")
            #expect(mistakes.error.contains("discarded 1 unsaved change(s)"))
            #expect(try await bed.run(["count", "Library", "--format", "table"]).output == "1\n")
        }
    }

    /// Each class of error has its exit code and a message that says what to do.
    @Test func errorClassesAndExitCodes() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("trips.json", SampleTrips.schema.canonicalJSON())])
                    .status == 0)
            let trip = [
                "insert", "Trip", "name=Kyoto", "destination=Japan", "startDate=2026-04-01", "endDate=2026-04-09",
            ]
            #expect(try await bed.run(trip).status == 0)
            let badSchema = try bed.file("bad-schema.json", "{\"entities\": [")
            let cases: [([String], Int32, String)] = [
                (["frobnicate"], 64, "Unexpected argument 'frobnicate'"),
                (["fetch"], 64, "Missing expected argument '<entity>'"),
                (
                    ["insert", "Trip", "startDate=yesterday"], 64,
                    "'startDate' is date, and \"yesterday\" is not an ISO 8601 date"
                ),
                (["insert", "Trip", "colour=red"], 64, "entity 'Trip' has no attribute or relationship 'colour'"),
                (["fetch", "Trip", "--where", "name =="], 64, "--where: expected a value after '=='"),
                // count parses its predicate before it calls: reported the same way (it was a dump, status 1).
                (["count", "Trip", "--where", "name = = 1"], 64, "modelctl: --where: expected a value after '='"),
                // A negative number reaches the check (it was "missing value").
                (["fetch", "Trip", "--limit", "-1"], 64, "limit -1 is negative"),
                (["fetch", "Spaceship"], 64, "unknown entity 'Spaceship'"),
                (["get", "not-a-uri"], 64, "is not an object URI"),
                (["--store", "nope", "count", "Trip"], 66, "no store named 'nope'"),
                (["store", "drop", "nope"], 66, "no store named 'nope'"),
                (trip, 75, "must be unique in (name, startDate, endDate)"),
                (["store", "create", "default"], 75, "a store named 'default' already exists"),
                (["store", "create", "other", "--schema", badSchema], 64, "modelctl: \(badSchema): "),
                (
                    ["store", "create", "other", "--schema", "/nonexistent/schema.json"], 66,
                    "modelctl: cannot read /nonexistent/schema.json: no such file"
                ),
                (
                    ["--socket", "/tmp/no-such-modeld.sock", "status"], 69,
                    "modelctl: is modeld running? tried /tmp/no-such-modeld.sock"
                ),
            ]
            for (arguments, code, message) in cases {
                let result = try await bed.run(arguments)
                #expect(result.status == code, "\(arguments): \(result)")
                #expect(result.error.contains(message), "\(arguments): \(result.error)")
            }
            // Nothing above changed the store, or made one.
            #expect(try await bed.run(["count", "Trip", "--format", "table"]).output == "1\n")
            let stores = try await bed.run(["store", "list", "--format", "jsonl"])
            #expect(stores.objects.map { $0["name"] as? String } == ["default"], "\(stores)")
        }
    }
}

extension ModelctlTests {
    /// What a running command has written to `file` once it contains `text` (the file is read as
    /// it grows), or what it holds after 30 s.
    static func waitForOutput(_ file: URL, containing text: String) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(30)
        var seen = try String(contentsOf: file, encoding: .utf8)
        while !seen.contains(text), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            seen = try String(contentsOf: file, encoding: .utf8)
        }
        return seen
    }
}
