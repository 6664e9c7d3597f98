import Foundation
import ModelTesting
import SystemdHarness
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A revoke reaches what its user opened before it: a watch and a history follower end
/// (PERMISSION_DENIED, modelctl's 77) at the next save rather than show it, and a session is
/// refused at its next call. Real Unix users, as in ``AccessControlTests``.
extension AccessControlTests {
    @Test func aRevokeEndsWatchesFollowersAndSessionsOpenedBefore() async throws {
        let accounts = Accounts()
        let daemon = try await ModeldProcess.launch(arguments: ["--socket-mode", "0666"])
        let directory = daemon.directory
        defer { Task { await daemon.remove() } }
        do {
            try await accounts.create(in: directory)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
            let modelctl = try await Self.copyModelctl(to: directory)
            let common = [modelctl.path, "--socket", daemon.socketPath, "--store", "shop", "--format", "jsonl"]
            func run(_ user: String, _ arguments: [String]) async throws -> CommandResult {
                try await SystemdHarness.run(
                    URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", user, "--"] + common + arguments, in: directory)
            }
            /// `arguments` run as `user` in the background, their output written to `name`, their
            /// input from `input` when given.
            func start(_ user: String, _ arguments: [String], into name: String, input: Pipe? = nil) throws
                -> Background
            {
                let output = directory.appendingPathComponent(name)
                _ = FileManager.default.createFile(atPath: output.path, contents: nil)
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
                process.arguments = ["-u", user, "--"] + common + arguments
                process.standardOutput = try FileHandle(forWritingTo: output)
                process.standardError = process.standardOutput
                if let input { process.standardInput = input }
                let (ended, end) = AsyncStream<Void>.makeStream()
                process.terminationHandler = { _ in end.finish() }
                try process.run()
                return Background(process: process, output: output, ended: ended)
            }
            let schema = try Self.noteSchema(in: directory)
            #expect(try await run(accounts.alice, ["store", "create", "shop"]).status == 0)
            #expect(try await run(accounts.alice, ["schema", "apply", schema.path]).status == 0)
            #expect(try await run(accounts.alice, ["insert", "Note", "text=before"]).status == 0)
            #expect(
                try await run(accounts.alice, ["store", "grant", "shop", "--user", accounts.bob, "--read"]).status == 0)

            // Bob watches the notes, follows the history and counts in a session of his shell, each
            // seeing what is there now.
            let watch = try start(accounts.bob, ["fetch", "Note", "--watch"], into: "watch.out")
            let follower = try start(accounts.bob, ["history", "--follow"], into: "follow.out")
            let commands = Pipe()
            let shell = try start(accounts.bob, ["shell"], into: "shell.out", input: commands)
            defer {
                for background in [watch, follower, shell] where background.process.isRunning {
                    kill(background.process.processIdentifier, SIGKILL)
                }
            }
            commands.fileHandleForWriting.write(Data("count Note\n".utf8))
            for (background, shown) in [(watch, "before"), (follower, "\"token\":1"), (shell, "\"count\":1")] {
                #expect(try await ModelctlTests.waitForOutput(background.output, containing: shown).contains(shown))
            }

            // The daemon's status counts what its caller may read: Bob's session, on a store he
            // may read, counts for him and for the store's owner, not for Carol, who may not.
            for (user, sessions) in [(accounts.bob, 1), (accounts.alice, 1), (accounts.carol, 0)] {
                let status = try await run(user, ["status"])
                #expect(status.objects.first?["open_sessions"] as? Int == sessions, "\(user): \(status)")
            }

            // Revoked, then a save: none shows it; the watch and the follower end refused, and so
            // does the session's next call.
            #expect(try await run(accounts.alice, ["store", "revoke", "shop", "--user", accounts.bob]).status == 0)
            #expect(try await run(accounts.alice, ["insert", "Note", "text=after"]).status == 0)
            commands.fileHandleForWriting.write(Data("count Note\n".utf8))
            try commands.fileHandleForWriting.close()
            for (background, saved) in [(watch, "after"), (follower, "\"token\":2"), (shell, "\"count\":2")] {
                await background.waitForEnd(within: .seconds(30))
                let (process, output) = (background.process, background.output)
                let seen = try String(contentsOf: output, encoding: .utf8)
                #expect(!process.isRunning && process.terminationStatus == 77, "\(output.lastPathComponent): \(seen)")
                #expect(!seen.contains(saved) && seen.contains("may not read the store 'shop'"), "\(seen)")
            }
            // The shell, leaving, could still close its session: its opener may always do that.
            let status = try await run(accounts.alice, ["status"])
            #expect(status.objects.first?["open_sessions"] as? Int == 0, "\(status)")
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await accounts.remove(in: directory)
    }

    /// A command run in the background, and the end of its process.
    struct Background {
        let process: Process
        let output: URL
        let ended: AsyncStream<Void>

        /// Returns once the process has ended, or `limit` has passed.
        func waitForEnd(within limit: Duration) async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in ended {} }
                group.addTask { try? await Task.sleep(for: limit) }
                await group.next()
                group.cancelAll()
            }
        }
    }
}
