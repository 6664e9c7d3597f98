import Foundation
import ModelCore
import ModelRemote
import ModelTesting
import SystemdHarness
import Testing

/// Who may open which store, against the spawned modeld with real Unix users made by the test:
/// callers are told apart by `SO_PEERCRED`, over both transports (modelctl takes the framed
/// socket; `MODELD_TRANSPORT=http2` the gRPC one). A store is its creator's; others get what its
/// owner grants; a refusal is PERMISSION_DENIED naming the store and the user, and changes
/// nothing; root and the administrators' group manage everything.
@Suite(.serialized) struct AccessControlTests {
    /// Users and a group made for one test, removed afterwards.
    struct Accounts {
        let suffix = String(UUID().uuidString.prefix(6)).lowercased()
        var alice: String { "mdt-a-\(suffix)" }
        var bob: String { "mdt-b-\(suffix)" }
        var carol: String { "mdt-c-\(suffix)" }
        var team: String { "mdt-t-\(suffix)" }
        var admins: String { "mdt-s-\(suffix)" }

        func create(in directory: URL) async throws {
            await Self.removeLeftovers(in: directory)
            for group in [team, admins] { try await Self.run("/usr/sbin/groupadd", [group], in: directory) }
            try await Self.run("/usr/sbin/useradd", ["-M", "-s", "/usr/sbin/nologin", alice], in: directory)
            try await Self.run("/usr/sbin/useradd", ["-M", "-s", "/usr/sbin/nologin", "-G", team, bob], in: directory)
            try await Self.run(
                "/usr/sbin/useradd", ["-M", "-s", "/usr/sbin/nologin", "-G", admins, carol], in: directory)
        }

        func remove(in directory: URL) async {
            for user in [alice, bob, carol] {
                _ = try? await SystemdHarness.run(URL(fileURLWithPath: "/usr/sbin/userdel"), [user], in: directory)
            }
            for group in [team, admins] {
                _ = try? await SystemdHarness.run(
                    URL(fileURLWithPath: "/usr/sbin/groupdel"), [group], in: directory)
            }
        }

        /// Removes the accounts a run that crashed before its clean-up left behind (this suite's
        /// tests run one at a time, so none of them is in use).
        static func removeLeftovers(in directory: URL) async {
            for (file, tool) in [("/etc/passwd", "/usr/sbin/userdel"), ("/etc/group", "/usr/sbin/groupdel")] {
                let names = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n")
                    .compactMap { $0.split(separator: ":").first.map(String.init) }.filter { $0.hasPrefix("mdt-") }
                for name in names {
                    _ = try? await SystemdHarness.run(URL(fileURLWithPath: tool), [name], in: directory)
                }
            }
        }

        static func run(_ tool: String, _ arguments: [String], in directory: URL) async throws {
            let result = try await SystemdHarness.run(URL(fileURLWithPath: tool), arguments, in: directory)
            try #require(result.status == 0, "\(tool) \(arguments): \(result)")
        }
    }

    @Test(arguments: ["framed", "http2"])
    func eachStoreIsItsOwnersAndWhatItGrants(transport: String) async throws {
        let accounts = Accounts()
        let daemon = try await ModeldProcess.launch(arguments: ["--socket-mode", "0666", "--admin-group", "root"])
        let directory = daemon.directory
        defer { Task { await daemon.remove() } }
        do {
            try await accounts.create(in: directory)
            // The relaunched daemon knows the administrators' group, made just now.
            try await daemon.stop()
            try await daemon.relaunch(arguments: ["--socket-mode", "0666", "--admin-group", accounts.admins])
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
            let modelctl = try await Self.copyModelctl(to: directory)
            func run(_ user: String, _ arguments: [String]) async throws -> CommandResult {
                try await SystemdHarness.run(
                    URL(fileURLWithPath: "/usr/sbin/runuser"),
                    [
                        "-u", user, "--", "/usr/bin/env", "MODELD_TRANSPORT=\(transport)", modelctl.path,
                        "--socket", daemon.socketPath, "--store", "shop", "--format", "json",
                    ] + arguments,
                    in: directory)
            }
            let schema = try Self.noteSchema(in: directory)

            // Alice makes a store: it is hers.
            let created = try await run(accounts.alice, ["store", "create", "shop"])
            #expect(created.status == 0 && created.output.contains("\"owner\":\"\(accounts.alice)\""), "\(created)")
            #expect(try await run(accounts.alice, ["schema", "apply", schema.path]).status == 0)
            #expect(try await run(accounts.alice, ["insert", "Note", "text=one"]).status == 0)

            // Bob may not see it, nor list it, nor change it.
            let refused = try await run(accounts.bob, ["fetch", "Note"])
            #expect(refused.status == 77, "\(refused)")
            #expect(
                refused.error.contains("user \(accounts.bob) (uid")
                    && refused.error.contains("may not read the store 'shop'"),
                "\(refused.error)")
            let listed = try await run(accounts.bob, ["store", "list", "--format", "jsonl"])
            #expect(!listed.output.contains("\"shop\""), "\(listed)")
            #expect(try await run(accounts.bob, ["insert", "Note", "text=bob's"]).status == 77)
            #expect(try await run(accounts.bob, ["store", "drop", "shop"]).status == 77)
            #expect(
                try await run(accounts.bob, ["store", "grant", "shop", "--user", accounts.bob, "--write"]).status == 77)

            // Nor may he have the daemon open a file as a store: it would with the daemon's rights.
            let secret = directory.appendingPathComponent("root-only.sqlite")
            try Data("not bob's".utf8).write(to: secret)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
            let attach = try await run(accounts.bob, ["store", "create", "spy", "--url", "sqlite://" + secret.path])
            #expect(attach.status == 77, "\(attach)")
            #expect(attach.error.contains("may not create a store at a URL of its own"), "\(attach.error)")
            #expect(try Data(contentsOf: secret) == Data("not bob's".utf8))
            #expect(try await run(accounts.bob, ["store", "info", "spy"]).status == 66)

            // Read for Bob: he reads, and still may not write.
            let granted = try await run(accounts.alice, ["store", "grant", "shop", "--user", accounts.bob, "--read"])
            #expect(granted.output.contains("\"user:\(accounts.bob)=read\""), "\(granted)")
            let read = try await run(accounts.bob, ["fetch", "Note", "--format", "jsonl"])
            #expect(read.status == 0 && read.objects.map { $0["text"] as? String } == ["one"], "\(read)")
            let write = try await run(accounts.bob, ["insert", "Note", "text=bob's"])
            #expect(write.status == 77 && write.error.contains("may not write to the store 'shop'"), "\(write)")
            // Write for his group: he writes.
            #expect(
                try await run(accounts.alice, ["store", "grant", "shop", "--group", accounts.team, "--write"]).status
                    == 0)
            #expect(try await run(accounts.bob, ["insert", "Note", "text=bob's"]).status == 0)
            // But only the owner (or an administrator) manages the store.
            #expect(try await run(accounts.bob, ["store", "retention", "shop", "--transactions", "1"]).status == 77)
            // Revoked, he is out again; nothing he tried while refused was saved.
            #expect(try await run(accounts.alice, ["store", "revoke", "shop", "--group", accounts.team]).status == 0)
            #expect(try await run(accounts.alice, ["store", "revoke", "shop", "--user", accounts.bob]).status == 0)
            #expect(try await run(accounts.bob, ["fetch", "Note"]).status == 77)
            let notes = try await run(accounts.alice, ["fetch", "Note", "--sort", "text", "--format", "jsonl"])
            #expect(notes.objects.map { $0["text"] as? String } == ["bob's", "one"], "\(notes)")
            // History names who saved, beside the author the client chose.
            let history = try await run(accounts.alice, ["history", "--format", "jsonl"])
            #expect(history.objects.map { $0["user"] as? String } == [accounts.alice, accounts.bob], "\(history)")

            // A grant for someone the host does not know.
            let unknown = try await run(
                accounts.alice, ["store", "grant", "shop", "--user", "no-such-user-\(accounts.suffix)", "--read"])
            #expect(unknown.status == 64 && unknown.error.contains("no user named"), "\(unknown)")

            // Administrators: the group's members and root manage every store, and read the metrics.
            let carol = try await run(accounts.carol, ["fetch", "Note", "--format", "jsonl"])
            #expect(carol.objects.count == 2, "\(carol)")
            #expect(try await run(accounts.carol, ["metrics"]).status == 0)
            #expect(try await run(accounts.bob, ["metrics"]).status == 77)
            try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                (root: DaemonClient) async throws -> Void in
                #expect(try await root.store("shop").owner == accounts.alice)
                #expect(try await root.count(FetchDescriptor(entityName: "Note"), in: "shop") == 2)
            }
            // A number the host does not name is taken as the id it is.
            let byNumber = try await run(accounts.alice, ["store", "grant", "shop", "--user", "4242424", "--read"])
            #expect(byNumber.status == 0 && byNumber.output.contains("\"user:4242424=read\""), "\(byNumber)")

            // The default store, made by the daemon itself, is open to every caller.
            #expect(try await run(accounts.bob, ["--store", "default", "store", "info", "default"]).status == 0)
            // Only an administrator may manage it: a grant (which gives it an owner), a revoke, or
            // a drop (after which the store made again under its name would be the dropper's).
            for attempt in [
                ["store", "grant", "default", "--user", accounts.bob, "--write"],
                ["store", "revoke", "default", "--user", accounts.alice],
                ["store", "drop", "default", "--force"],
            ] {
                let takeOver = try await run(accounts.bob, attempt)
                #expect(takeOver.status == 77 && takeOver.error.contains("has no owner"), "\(attempt): \(takeOver)")
            }
            // Still there, and still open to him.
            #expect(try await run(accounts.bob, ["--store", "default", "store", "info", "default"]).status == 0)
            let openInfo = try await run(accounts.bob, ["--store", "default", "store", "info", "default"])
            #expect(openInfo.status == 0 && openInfo.output.contains("\"owner\":null"), "\(openInfo)")
            let owned = try await run(
                accounts.carol, ["store", "grant", "default", "--user", accounts.alice, "--read"])
            #expect(owned.status == 0 && owned.output.contains("\"owner\":\"\(accounts.carol)\""), "\(owned)")
            #expect(try await run(accounts.bob, ["--store", "default", "count", "Note"]).status == 77)
            #expect(try await run(accounts.alice, ["--store", "default", "store", "info", "default"]).status == 0)

            // A user the socket's permissions keep out is told so (77), not asked whether modeld
            // runs (69).
            for path in [daemon.socketPath, daemon.socketPath + ".frames"] {
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            }
            let kept = try await run(accounts.bob, ["status"])
            #expect(kept.status == 77 && kept.error.contains("permission denied on"), "\(kept)")
            #expect(try await daemon.stop() == 0)
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await accounts.remove(in: directory)
    }

    /// A schema of one entity, `Note` with a `text`, in a file every user may read.
    static func noteSchema(in directory: URL) throws -> URL {
        let schema = directory.appendingPathComponent("schema.json")
        try #"{"entities": [{"name": "Note", "attributes": [{"name": "text", "type": "string"}]}]}"#
            .write(to: schema, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: schema.path)
        return schema
    }

    /// modelctl, copied where other users can run it (by cp in a process of its own: see ModeldTests).
    static func copyModelctl(to directory: URL) async throws -> URL {
        let source = try modeldExecutable().deletingLastPathComponent().appendingPathComponent("modelctl")
        let copy = directory.appendingPathComponent("modelctl")
        let cp = try await SystemdHarness.run(
            URL(fileURLWithPath: "/bin/cp"), [source.path, copy.path], in: directory)
        try #require(cp.status == 0, "\(cp)")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
        return copy
    }
}
