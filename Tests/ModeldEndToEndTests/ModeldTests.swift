#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import SystemdHarness
import Testing

/// The real `modeld` executable, spawned as a child process.
@Suite struct ModeldTests {
    /// With no flags at all, modeld serves a `default` store from the per-user locations.
    @Test func noFlagsServesTheDefaultStore() async throws {
        let directory = try TemporaryDirectory.make(prefix: "me")
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = [
            "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": directory.path + "/run",
            "XDG_DATA_HOME": directory.path + "/data",
        ]
        var executable = try modeldExecutable()
        var command = [String]()
        if geteuid() == 0 {
            // Root's defaults are the system's (/run/modeld, /var/lib/modeld): run as nobody to
            // see a user's defaults, with a copy of the executable nobody can surely reach.
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
            let copy = directory.appendingPathComponent("modeld")
            // Copied by cp, in a process of its own: a copy written here would leave its write
            // descriptor open in any child another test forks meanwhile, and executing the copy
            // would then fail with ETXTBSY ("Text file busy").
            let cp = Process()
            cp.executableURL = URL(fileURLWithPath: "/bin/cp")
            cp.arguments = [executable.path, copy.path]
            try cp.run()
            cp.waitUntilExit()
            try #require(cp.terminationStatus == 0, "cp \(executable.path) failed")
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
            command = ["--reuid=65534", "--regid=65534", "--clear-groups", copy.path]
            executable = URL(fileURLWithPath: "/usr/bin/setpriv")
            environment["HOME"] = directory.path
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = command
        process.environment = environment
        let log = directory.appendingPathComponent("log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        let socket = directory.path + "/run/modeld/modeld.sock"
        let deadline = ContinuousClock.now + .seconds(30)
        var stores: [StoreInfo] = []
        while ContinuousClock.now < deadline, process.isRunning {
            if let found = try? await DaemonClient.withClient(socketPath: socket, { try await $0.stores() }) {
                stores = found
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(stores.map(\.name) == ["default"], "\(output)")
        #expect(stores.first?.path == directory.path + "/data/modeld/stores/default.sqlite")
        #expect((try FileManager.default.attributesOfItem(atPath: socket)[.posixPermissions] as? Int) == 0o660)
        #expect(output.contains("listening on \(socket)"), "\(output)")
        kill(process.processIdentifier, SIGTERM)
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    /// SIGTERM, SIGINT and SIGHUP (a closed terminal; SIGHUP once killed it, leaving its
    /// sockets): exit 0, socket removed, saved data there after a restart.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aStopSignalStopsCleanlyAndStoresComeBack(signal: Int32) async throws {
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""])
        do {
            let id: PersistentIdentifier = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.createStore("trips", schema: SampleTrips.schema)
                let saved = try await client.apply(
                    [
                        .insert(
                            entity: "Trip",
                            attributes: [
                                "name": .string("Kyoto"), "destination": .string("Japan"),
                                "startDate": .string("2026-04-01"), "endDate": .string("2026-04-09"),
                            ], relationships: [:], id: nil)
                    ], in: "trips")
                return try #require(saved.remappedIdentifiers.values.first)
            }
            #expect(try await daemon.stop(signal: signal) == 0)
            #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))
            #expect(!FileManager.default.fileExists(atPath: daemon.socketPath + ".frames"))
            #expect(daemon.log.contains("stopped"), "\(daemon.log)")
            try await daemon.restart()
            let name = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                try await $0.objects([id], in: "trips").first?["name"]
            }
            #expect(name == .string("Kyoto"))
        } catch {
            Issue.record("\(error)\n\(daemon.log)")
        }
        await daemon.remove()
    }

    /// SIGKILL leaves the socket file behind; the next start replaces it, and every save the
    /// client heard acknowledged is there.
    @Test func aCrashLeavesNothingThatStopsTheRestart() async throws {
        let daemon = try await ModeldProcess.launch()
        do {
            let count = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.applySchema(Catalog.schema, to: "default")
                for i in 0..<20 {
                    try await client.apply(
                        [
                            .insert(
                                entity: "Library", attributes: ["name": .string("L\(i)")], relationships: [:], id: nil)
                        ], in: "default")
                }
                return 20
            }
            try await daemon.kill()
            #expect(
                FileManager.default.fileExists(atPath: daemon.socketPath), "a killed daemon cannot remove its socket")
            try await daemon.restart()
            let found = try await DaemonClient.withClient(socketPath: daemon.socketPath) {
                try await $0.count(FetchDescriptor(entityName: "Library"), in: "default")
            }
            #expect(found == count)
        } catch {
            Issue.record("\(error)\n\(daemon.log)")
        }
        await daemon.remove()
    }

    /// A data directory (or its stores directory) that other users may write to, or another
    /// user's, is refused before anything is served: they could rename or delete stores there,
    /// whatever access control says. One the daemon makes is its user's alone (0700).
    @Test func aDataDirectoryOthersMayWriteToIsRefused() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mw")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        func start() async throws -> CommandResult {
            try await run(
                try modeldExecutable(), ["--socket", directory.path + "/s", "--data-dir", data.path], in: directory)
        }
        for (path, mode) in [(data.path, 0o777), (data.path + "/stores", 0o1777)] as [(String, Int)] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: data.path)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            let refused = try await start()
            #expect(refused.status == 1, "\(refused)")
            #expect(
                refused.error.contains("the data directory \(path) is not safe to serve from")
                    && refused.error.contains("other users may write to it (mode \(String(mode & 0o777, radix: 8)))")
                    && refused.error.contains("(chmod 700 \(path))"),
                "\(refused.error)")
            #expect(!FileManager.default.fileExists(atPath: directory.path + "/s"), "nothing was served")
        }
        // Another user's, even private.
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: data.path + "/stores")
        #expect(chown(data.path, 65534, 65534) == 0)
        let others = try await start()
        // The remedy for another user's directory is a chown: a chmod would leave it theirs.
        #expect(
            others.status == 1 && others.error.contains("it belongs to uid 65534")
                && others.error.contains("(chown \(geteuid()) \(data.path))") && !others.error.contains("chmod"),
            "\(others)")
    }

    /// A default store that cannot be made is a failure to start, said as one (a `modeld:` line
    /// naming the store and the setting that asks for it, status 1), not an error of a save.
    @Test func aDefaultStoreThatCannotBeMadeStopsTheStart() async throws {
        let directory = try TemporaryDirectory.make(prefix: "md")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = directory.path + "/data/stores"
        try FileManager.default.createDirectory(atPath: stores, withIntermediateDirectories: true)
        for path in [directory.path + "/data", stores] {
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        }
        try Data("an operator's notes, not a database\n".utf8).write(
            to: URL(fileURLWithPath: stores + "/default.sqlite"))
        let refused = try await run(
            try modeldExecutable(), ["--socket", directory.path + "/s", "--data-dir", directory.path + "/data"],
            in: directory)
        #expect(refused.status == 1, "\(refused)")
        #expect(
            refused.error.contains("modeld: cannot create the 'default' store, which --default-store")
                && refused.error.contains("(or start with --default-store '' for none)"), "\(refused.error)")
        #expect(!refused.error.contains("Error: "), "\(refused.error)")
        #expect(
            try String(contentsOfFile: stores + "/default.sqlite", encoding: .utf8)
                == "an operator's notes, not a database\n")
    }

    /// The framed socket's path beside the socket is checked as the socket's is: a file there
    /// that is not a socket is refused and kept (it was deleted, and the daemon started serving
    /// HTTP/2 alone, or not, as a race went).
    @Test func aFileAtTheFramedSocketsPathIsRefusedAndKept() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mf")
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.path + "/m.sock"
        try Data("an operator's file\n".utf8).write(to: URL(fileURLWithPath: socket + ".frames"))
        let refused = try await run(
            try modeldExecutable(), ["--socket", socket, "--data-dir", directory.path + "/data"], in: directory)
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.error.contains("\(socket).frames exists and is not a socket"), "\(refused.error)")
        #expect(try String(contentsOfFile: socket + ".frames", encoding: .utf8) == "an operator's file\n")
        #expect(!FileManager.default.fileExists(atPath: socket), "nothing was served")
    }

    /// A socket's directory someone else could swap the socket in (another user's, or written by
    /// all without the sticky bit) is refused by the daemon; a client refuses the per-user socket
    /// in /tmp when its directory is not the user's own.
    @Test func aSocketDirectoryOthersControlIsRefused() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mq")
        defer { try? FileManager.default.removeItem(at: directory) }
        let shared = directory.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: shared.path)
        let open = try await run(
            try modeldExecutable(), ["--socket", shared.path + "/s", "--data-dir", directory.path + "/d"],
            in: directory)
        #expect(open.status == 1, "\(open)")
        #expect(open.error.contains("the socket's directory \(shared.path) is not safe to serve in"), "\(open.error)")
        #expect(open.error.contains("other users may write to it (mode 777)"), "\(open.error)")
        #expect(!FileManager.default.fileExists(atPath: shared.path + "/s"))
        // Another user's, even private.
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: shared.path)
        #expect(chown(shared.path, 65534, 65534) == 0)
        let others = try await run(
            try modeldExecutable(), ["--socket", shared.path + "/s", "--data-dir", directory.path + "/d"],
            in: directory)
        #expect(others.status == 1, "\(others)")
        #expect(others.error.contains("it belongs to uid 65534"), "\(others.error)")

        // A client's per-user socket in /tmp, in a directory another user made first.
        let fallback = "/tmp/modeld-\(geteuid())"
        try? FileManager.default.removeItem(atPath: fallback)
        try FileManager.default.createDirectory(atPath: fallback, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: fallback) }
        #expect(chown(fallback, 65534, 65534) == 0)
        do {
            _ = try await DaemonClient.withClient(socketPath: fallback + "/modeld.sock") { try await $0.status() }
            Issue.record("a client connected through \(fallback), which uid 65534 owns")
        } catch let error as ModelError {
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("\(fallback) belongs to uid 65534"), "\(error.message)")
        }
    }

    @Test func aSecondDaemonOnTheSameDataIsRefused() async throws {
        let daemon = try await ModeldProcess.launch()
        let second = try await run(
            try modeldExecutable(),
            ["--socket", daemon.directory.path + "/other.sock", "--data-dir", daemon.dataDirectory],
            in: daemon.directory)
        #expect(second.status == 1)
        #expect(
            second.error.contains(
                "modeld: another modeld (pid \(daemon.processIdentifier)) is already using the data directory \(daemon.dataDirectory)"
            ),
            "\(second.error)")
        let third = try await run(
            try modeldExecutable(), ["--socket", daemon.socketPath, "--data-dir", daemon.directory.path + "/data2"],
            in: daemon.directory)
        #expect(third.status == 1)
        #expect(third.error.contains("is already using the socket \(daemon.socketPath)"), "\(third.error)")
        // The first daemon is undisturbed.
        #expect(
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { try await $0.stores() }.map(\.name) == [
                "default"
            ])
        await daemon.remove()
    }

    @Test func helpExplainsEveryOption() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mh")
        defer { try? FileManager.default.removeItem(at: directory) }
        let help = try await run(try modeldExecutable(), ["--help"], in: directory)
        #expect(help.status == 0)
        for option in [
            "--socket ", "--socket-mode", "--data-dir", "--idle-timeout", "--max-sessions", "--max-message-size",
            "--log-level", "--default-store", "--time-slice",
            "MODELD_SOCKET", "MODELD_SOCKET_MODE", "MODELD_DATA_DIR", "MODELD_IDLE_TIMEOUT", "MODELD_MAX_SESSIONS",
            "MODELD_MAX_MESSAGE_SIZE", "--max-watch-memory", "MODELD_MAX_WATCH_MEMORY",
            "MODELD_LOG_LEVEL", "MODELD_TIME_SLICE", "SIGTERM", "Exit status: 0 after such a stop; 64",
        ] {
            #expect(help.output.contains(option), "\(option) missing from:\n\(help.output)")
        }
    }

    /// The manual page says the overview once, in DESCRIPTION, and its OPTIONS section lists the
    /// options alone (it held the whole `--help` text: the overview again and a usage line).
    @Test func theManualListsTheOptionsOnce() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mm")
        defer { try? FileManager.default.removeItem(at: directory) }
        let manual = try await run(try modeldExecutable(), ["--manual"], in: directory)
        #expect(manual.status == 0 && manual.output.hasPrefix(".TH MODELD 8"))
        let page = manual.output
        let options = try #require(page.range(of: ".SH OPTIONS\n")).upperBound
        let section = page[options...]
        let optionsSection = String(section[..<(section.range(of: "\n.SH ")?.lowerBound ?? section.endIndex)])
        for option in ["--socket <socket>", "--idle-timeout", "--time-slice", "MODELD_DATA_DIR", "--help"] {
            #expect(optionsSection.contains(option), "\(option) missing from OPTIONS:\n\(optionsSection)")
        }
        #expect(!optionsSection.contains("OVERVIEW:") && !optionsSection.contains("USAGE:"), "\(optionsSection)")
        #expect(page.components(separatedBy: "SIGTERM, SIGINT or SIGHUP").count == 2, "the overview once")
    }

    @Test(arguments: [
        (["--socket-mode", "999"], "socket mode '999' is not an octal permission"),
        (["--idle-timeout=-1"], "the idle timeout must be a positive number of seconds"),
        (["--max-sessions", "0"], "max sessions must be at least 1"),
        (["--max-message-size", "12Q"], "max message size '12Q' is not a size"),
        (["--max-message-size", "2G"], "max message size '2G' must be between 64K and 1024M"),
        (["--max-store-size", "10X"], "max store size '10X' is not a size"),
        (["--max-store-size", "9999999999T"], "max store size '9999999999T' is not a size"),
        (["--max-store-size", "1K"], "max store size '1K' must be at least 64K"),
        (["--max-watch-memory", "512K"], "max watch memory '512K' must be at least 1M"),
        (["--default-store", "Bad!"], "default store: 'Bad!' is not a valid store name"),
        (["--max-watch-memory", "lots"], "max watch memory 'lots' is not a size"),
        (
            ["--max-pending-request-bytes", "1M"],
            "max pending request bytes '1M' is less than the max message size (16777216 bytes)"
        ),
        (["--log-level", "loud"], "log level 'loud' is not one of"),
        (["--time-slice", "50"], "time slice '50' must be 0 (the kernel's) or 100 to 100000 microseconds"),
        // A bare number is not read as seconds: "30" meant as 30 days would delete nearly all history.
        (
            ["--history-retention-age", "30"],
            "history retention age '30' is not an age: a positive number and its unit"
        ),
        (["--history-retention-age=-2d"], "history retention age '-2d' is not an age"),
        (["--history-retention-age", "infh"], "history retention age 'infh' is not an age"),
    ])
    func badSettingsAreUsageErrors(arguments: [String], message: String) async throws {
        let directory = try TemporaryDirectory.make(prefix: "mb")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await run(
            try modeldExecutable(),
            arguments + ["--socket", directory.path + "/s", "--data-dir", directory.path + "/d"], in: directory)
        #expect(result.status == 64, "\(result)")
        #expect(result.error.contains(message), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/d"), "nothing was started")
    }

    /// The environment sets what the flags would; a flag wins over its variable.
    @Test func environmentVariablesConfigureTheDaemon() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mv")
        let daemon = try await ModeldProcess.launch(
            arguments: ["--max-sessions", "7"],
            environment: [
                "MODELD_MAX_SESSIONS": "3", "MODELD_IDLE_TIMEOUT": "42", "MODELD_SOCKET_MODE": "0600",
                "MODELD_DEFAULT_STORE": "inbox",
            ], directory: directory)
        let status = try await DaemonClient.withClient(socketPath: daemon.socketPath) { try await $0.status() }
        #expect(status.maximumSessions == 7 && status.idleTimeoutSeconds == 42)
        #expect(
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { try await $0.stores() }.map(\.name) == [
                "inbox"
            ])
        #expect(
            (try FileManager.default.attributesOfItem(atPath: daemon.socketPath)[.posixPermissions] as? Int) == 0o600)
        await daemon.remove()
    }

    @Test func aClientWithoutADaemonIsToldSo() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mn")
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.path + "/nobody.sock"
        let error = await #expect(throws: ModelError.self) {
            try await DaemonClient.withClient(socketPath: socket) { try await $0.status() }
        }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message.contains("is modeld running?") == true && error?.message.contains(socket) == true,
            "\(String(describing: error))")
    }
}
