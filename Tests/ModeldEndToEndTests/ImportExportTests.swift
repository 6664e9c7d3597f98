import Foundation
import ModelCore
import ModelFixtures
import ModelTesting
import SystemdHarness
import Testing

/// `modelctl import` and `export`: streamed, batched, and a faithful round trip.
@Suite struct ImportExportTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Item",
            attributes: [
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "rank", type: .int, isOptional: true),
                AttributeDescription(name: "price", type: .double, isOptional: true),
                AttributeDescription(name: "added", type: .date, isOptional: true),
                AttributeDescription(name: "amount", type: .decimal, isOptional: true),
                AttributeDescription(name: "meta", type: .json, isOptional: true),
                AttributeDescription(name: "blob", type: .data, isOptional: true),
                AttributeDescription(name: "ok", type: .bool, isOptional: true),
                AttributeDescription(name: "code", type: .uuid, isOptional: true),
                AttributeDescription(name: "link", type: .url, isOptional: true),
            ], uniqueConstraints: [["title"]])
    ])

    /// `count` rows exercising every type: quotes, commas, line breaks and accents in strings, the
    /// empty string and nil, decimals that JSON numbers would round, JSON text, microseconds.
    static func rows(_ count: Int) -> String {
        var out = ""
        out.reserveCapacity(count * 300)
        for i in 0..<count {
            let title = i % 13 == 0 ? "\"t\(i)\"" : "\"item \(i) \\\"q\\\", é\\nline\""
            let price = i % 10 == 0 ? "null" : (i % 17 == 0 ? "\"inf\"" : "\(Double(i) / 7)")
            out +=
                "{\"title\": \(title), \"rank\": \(i % 97), \"price\": \(price), \"added\": \"2026-01-\(String(format: "%02d", 1 + i % 28))T10:00:00.\(String(format: "%06d", i % 1_000_000))Z\", "
            out +=
                "\"amount\": \"\(i).\(String(format: "%02d", i % 100))000000000000001\", \"meta\": {\"k\": \(i), \"s\": \"é\"}, \"blob\": \"AAEC\", "
            out +=
                "\"ok\": \(i % 3 == 0 ? "null" : (i % 2 == 0 ? "true" : "false")), \"code\": \"0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9\", \"link\": \"https://example.com/\(i)?a=b\"}\n"
        }
        return out
    }

    /// Objects exported from one store and imported into another are the same (apart from URIs),
    /// through JSON Lines on 100,000 rows and through CSV.
    @Test func aHundredThousandRowsRoundTrip() async throws {
        try await CLITestbed.with { bed in
            let schema = try bed.file("items.json", Self.schema.canonicalJSON())
            for store in ["src", "dst", "csv"] {
                #expect(try await bed.run(["store", "create", store, "--schema", schema]).status == 0)
            }
            let loaded = try await bed.run([
                "--store", "src", "import", "Item", try bed.file("items.jsonl", Self.rows(100_000)), "--batch-size",
                "5000",
            ])
            #expect(loaded.status == 0 && loaded.error.contains("imported 100,000 objects"), "\(loaded)")

            let exported = bed.directory.appendingPathComponent("export.jsonl").path
            let export = try await bed.run(["--store", "src", "export", "Item", "-o", exported])
            #expect(export.status == 0 && export.error.contains("exported 100,000 objects"), "\(export)")
            #expect(
                try await bed.run(["--store", "dst", "import", "Item", exported, "--batch-size", "5000"]).status == 0)

            // Named *.csv, without --format: CSV, as import reads a file of that name.
            let csvFile = bed.directory.appendingPathComponent("export.csv").path
            #expect(
                try await bed.run(["--store", "src", "export", "Item", "--where", "rank < 10", "-o", csvFile]).status
                    == 0)
            #expect(try String(contentsOfFile: csvFile, encoding: .utf8).hasPrefix("uri,"))
            // A failed export (a misspelt entity, a missing store) leaves the last one as it was.
            let before = try Data(contentsOf: URL(fileURLWithPath: csvFile))
            #expect(try await bed.run(["--store", "src", "export", "Itme", "-o", csvFile]).status == 64)
            #expect(try await bed.run(["--store", "nowhere", "export", "Item", "-o", csvFile]).status == 66)
            #expect(try Data(contentsOf: URL(fileURLWithPath: csvFile)) == before)
            let partials = try FileManager.default.contentsOfDirectory(atPath: bed.directory.path)
                .filter { $0.contains(".partial-") }
            #expect(partials.isEmpty, "\(partials)")
            #expect(try await bed.run(["--store", "csv", "import", "Item", csvFile]).status == 0)

            func contents(_ store: String, _ predicate: String = "TRUEPREDICATE") async throws -> [String] {
                let result = try await bed.run([
                    "--store", store, "export", "Item", "--where", predicate, "--format", "jsonl",
                ])
                #expect(result.status == 0)
                // Everything but the URI (the store's UUID differs), in key order.
                return result.lines.map { line in
                    line.replacingOccurrences(of: #"^\{"uri":"[^"]*","#, with: "{", options: .regularExpression)
                }
            }
            let source = try await contents("src")
            #expect(source.count == 100_000)
            #expect(try await contents("dst") == source)
            let csvSource = try await contents("src", "rank < 10")
            #expect(try await contents("csv") == csvSource)
            #expect(
                source.contains { $0.contains(#""price":"inf""#) } && source.contains { $0.contains(#""ok":null"#) })
        }
    }

    /// A batch that fails names its lines; the batches before it stay saved.
    @Test func aFailingBatchIsReportedAndEarlierOnesStay() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("items.json", Self.schema.canonicalJSON())]).status
                    == 0)
            var lines = (0..<25).map { "{\"title\": \"t\($0)\"}" }
            lines[17] = "{\"title\": \"t3\"}" // collides with row 4 on the unique title
            let result = try await bed.run([
                "import", "Item", try bed.file("dup.jsonl", lines.joined(separator: "\n")), "--batch-size", "10",
            ])
            #expect(result.status == 75, "\(result)")
            #expect(
                result.error.contains("lines 11-20 were not imported")
                    && result.error.contains("(the 10 objects before them were)"), "\(result.error)")
            #expect(try await bed.run(["count", "Item", "--format", "table"]).output == "10\n")

            let bad = try await bed.run([
                "import", "Item",
                try bed.file("bad.jsonl", "{\"title\": \"ok\"}\n{\"title\": \"x\", \"rank\": \"many\"}\n"),
            ])
            #expect(
                bad.status == 64 && bad.error.contains("line 2: 'rank' is int, and \"many\" is not a whole number"),
                "\(bad.error)")
            // A line refused here, after whole batches were saved, names the last line saved.
            let late = try await bed.run([
                "import", "Item",
                try bed.file(
                    "late.jsonl",
                    (1...4).map { "{\"title\": \"late \($0)\"}" }.joined(separator: "\n")
                        + "\n{\"title\": \"x\", \"rank\": \"many\"}\n"),
                "--batch-size", "2",
            ])
            #expect(
                late.status == 64 && late.error.contains("line 5: 'rank' is int")
                    && late.error.contains("(the 4 objects up to line 4 were imported, none after it)"),
                "\(late.error)")
            #expect(try await bed.run(["count", "Item", "--format", "table"]).output == "14\n")
            let broken = try await bed.run(["import", "Item", try bed.file("broken.csv", "title,colour\nx,red\n")])
            #expect(broken.status == 64 && broken.error.contains("the CSV header names 'colour'"), "\(broken.error)")
            let missing = try await bed.run(["import", "Item", bed.directory.appendingPathComponent("nope.jsonl").path])
            #expect(missing.status == 66 && missing.error.contains("no such file"), "\(missing.error)")
            #expect(try await bed.run(["count", "Item", "--format", "table"]).output == "14\n")
        }
    }

    /// On a terminal, import shows rows, rate, a bar and the time left.
    /// An export of an entity with subentities holds every object with its own properties
    /// (CSV: the subentities' columns too) and reads back whole, each object of its own entity.
    @Test(arguments: ["jsonl", "csv"])
    func anEntityWithSubentitiesRoundTrips(format: String) async throws {
        let zoo = Schema(entities: [
            EntityDescription(name: "Animal", attributes: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(
                name: "Dog", superentity: "Animal",
                attributes: [AttributeDescription(name: "breed", type: .string, isOptional: true)]),
        ])
        try await CLITestbed.with { bed in
            let schema = try bed.file("zoo.json", zoo.canonicalJSON())
            for store in ["zoo", "copy"] {
                #expect(try await bed.run(["store", "create", store, "--schema", schema]).status == 0)
            }
            #expect(try await bed.run(["--store", "zoo", "insert", "Animal", "name=generic"]).status == 0)
            #expect(try await bed.run(["--store", "zoo", "insert", "Dog", "name=rex", "breed=lab"]).status == 0)
            let file = bed.directory.appendingPathComponent("animals.\(format)").path
            let exported = try await bed.run(["--store", "zoo", "export", "Animal", "--format", format, "-o", file])
            #expect(exported.status == 0, "\(exported)")
            if format == "csv" {
                let header = try String(contentsOfFile: file, encoding: .utf8).split(whereSeparator: \.isNewline).first
                #expect(header == "uri,version,name,breed", "\(String(describing: header))")
            }
            let imported = try await bed.run(["--store", "copy", "import", "Animal", file])
            #expect(imported.status == 0, "\(imported)")
            let dogs = try await bed.run(["--store", "copy", "fetch", "Dog", "--format", "jsonl"])
            #expect(dogs.objects.map { "\($0["name"] ?? "") \($0["breed"] ?? "")" } == ["rex lab"], "\(dogs)")
            let all = try await bed.run(["--store", "copy", "count", "Animal", "--format", "csv"])
            #expect(all.output == "count\n2\n", "\(all)")
        }
    }

    /// A misspelt `--fields` name is refused, as fetch refuses it (export wrote a column of nils).
    @Test func exportRefusesFieldsTheEntityLacks() async throws {
        try await CLITestbed.with { bed in
            let schema = try bed.file("items.json", Self.schema.canonicalJSON())
            #expect(try await bed.run(["schema", "apply", schema]).status == 0)
            #expect(try await bed.run(["insert", "Item", "title=one"]).status == 0)
            let refused = try await bed.run(["export", "Item", "--fields", "title,nosuch"])
            #expect(refused.status == 64 && refused.error.contains("nosuch"), "\(refused)")
            #expect(refused.output.isEmpty, "\(refused)")
            let spaced = try await bed.run(["export", "Item", "--fields", "title, rank"])
            #expect(spaced.status == 0 && spaced.objects.first?["title"] as? String == "one", "\(spaced)")
        }
    }

    @Test func importShowsProgressOnATerminal() async throws {
        try await CLITestbed.with { bed in
            #expect(
                try await bed.run(["schema", "apply", try bed.file("items.json", Self.schema.canonicalJSON())]).status
                    == 0)
            let file = try bed.file("items.jsonl", Self.rows(20_000))
            // script(1) gives modelctl a pseudo-terminal, as a person's shell would.
            let command =
                "MODELD_SOCKET='\(bed.daemon.socketPath)' '\(bed.modelctl.path)' import Item '\(file)' --batch-size 500"
            let result = try await run(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qefc", command, "/dev/null"], in: bed.directory)
            #expect(result.status == 0, "\(result)")
            #expect(
                result.output.contains("rows/s") && result.output.contains("ETA") && result.output.contains("%"),
                "\(result.output)")
            #expect(result.output.contains("imported 20,000 objects"))
        }
    }
}
