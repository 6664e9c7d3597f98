#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelRemote
import ModelTesting
import SystemdHarness
import Testing

/// modeld under systemd, tested here where systemd is not PID 1: the units pass
/// `systemd-analyze`, socket activation hands over the socket, and notifications arrive in order.
@Suite struct SystemdTests {
    static let analyze = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// The units as `scripts/install` renders them, for the built modeld, with man pages where
    /// `man` finds them (the units' Documentation= must resolve).
    static func renderUnits(in directory: URL) async throws -> (service: String, socket: String, manpath: String) {
        let modeld = try modeldExecutable()
        let service = try String(
            contentsOf: repository.appendingPathComponent("systemd/modeld.service"), encoding: .utf8
        )
        .replacingOccurrences(of: "@BINDIR@", with: modeld.deletingLastPathComponent().path)
        try service.write(to: directory.appendingPathComponent("modeld.service"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            at: repository.appendingPathComponent("systemd/modeld.socket"),
            to: directory.appendingPathComponent("modeld.socket"))
        let man = directory.appendingPathComponent("man")
        try FileManager.default.createDirectory(
            at: man.appendingPathComponent("man8"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: man.appendingPathComponent("man1"), withIntermediateDirectories: true)
        try await run(modeld, ["--manual"], in: directory).output.write(
            to: man.appendingPathComponent("man8/modeld.8"), atomically: true, encoding: .utf8)
        let modelctl = modeld.deletingLastPathComponent().appendingPathComponent("modelctl")
        try await run(modelctl, ["manual"], in: directory).output.write(
            to: man.appendingPathComponent("man1/modelctl.1"), atomically: true, encoding: .utf8)
        return (
            directory.appendingPathComponent("modeld.service").path,
            directory.appendingPathComponent("modeld.socket").path, man.path
        )
    }

    /// What `systemd-analyze security --offline=true` says of the rendered service (with any
    /// drop-ins beside it), after checking that `systemd-analyze verify` passes both units.
    static func verifyAndRate(_ units: (service: String, socket: String, manpath: String), in directory: URL)
        async throws -> (output: String, line: String, score: Double?)
    {
        var environment = ProcessInfo.processInfo.environment
        environment["MANPATH"] = units.manpath
        let verify = try await run(
            analyze, ["verify", units.service, units.socket], environment: environment, in: directory)
        #expect(verify.status == 0 && verify.error.isEmpty, "\(verify)")
        let security = try await run(
            analyze, ["security", "--offline=true", units.service], environment: environment, in: directory)
        let line = String(
            security.output.split(separator: "\n").first { $0.contains("Overall exposure level for modeld.service") }
                ?? "")
        let score = line.split(separator: ":").last.flatMap { Double($0.split(separator: " ").first ?? "") }
        #expect(score != nil && score! <= 2.5, "\(security.output.suffix(400))")
        return (security.output, line, score)
    }

    @Test func theUnitsVerifyAndTheServiceIsSafe() async throws {
        let directory = try TemporaryDirectory.make(prefix: "su")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (_, line, score) = try await Self.verifyAndRate(try await Self.renderUnits(in: directory), in: directory)
        // The score is recorded in docs/systemd.md; keep the two in step.
        let documented = try String(
            contentsOf: Self.repository.appendingPathComponent("docs/systemd.md"), encoding: .utf8)
        #expect(
            documented.contains("exposure level \(score.map { String(format: "%.1f", $0) } ?? "?")"),
            "update docs/systemd.md: \(line)")
    }

    /// Under `systemd-socket-activate`, modeld serves on the socket it is handed, and leaves the
    /// socket file (systemd's, not its own) in place when it stops.
    @Test func socketActivationHandsOverTheSocket() async throws {
        let directory = try TemporaryDirectory.make(prefix: "sa")
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("activated.sock").path
        let log = directory.appendingPathComponent("log")
        let process = try SpawnedProcess(
            "/usr/bin/systemd-socket-activate",
            [
                "--listen=\(socket)", try modeldExecutable().path, "--data-dir",
                directory.appendingPathComponent("data").path, "--default-store", "activated",
            ], environment: ["PATH": "/usr/bin:/bin"], output: log.path)
        defer { if process.isRunning { process.signal(SIGKILL) } }

        var stores: [StoreInfo]?
        var status: DaemonStatus?
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, stores == nil {
            if FileManager.default.fileExists(atPath: socket) {
                (status, stores) =
                    (try? await DaemonClient.withClient(socketPath: socket) { client in
                        (try await client.status(), try await client.stores())
                    }) ?? (nil, nil)
            }
            if stores == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(stores?.map(\.name) == ["activated"], "\(output)")
        #expect(
            status?.processIdentifier == Int(process.processIdentifier),
            "systemd-socket-activate execs modeld in its place")
        #expect(output.contains("listening on \(socket)"), "\(output)")
        process.signal(SIGTERM)
        #expect(try await process.wait() == 0)
        #expect(FileManager.default.fileExists(atPath: socket), "the socket is systemd's to remove")
    }

    /// Handed the framed socket too (`<path>.frames`, passed first here: modeld tells the two
    /// apart by their paths, not their order), modeld serves both transports on systemd's sockets
    /// and leaves both files in place when it stops.
    @Test func socketActivationHandsOverBothTransports() async throws {
        let directory = try TemporaryDirectory.make(prefix: "sb")
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("activated.sock").path
        let frames = socket + ".frames"
        let log = directory.appendingPathComponent("log")
        let process = try SpawnedProcess(
            "/usr/bin/systemd-socket-activate",
            [
                "--listen=\(frames)", "--listen=\(socket)", try modeldExecutable().path, "--data-dir",
                directory.appendingPathComponent("data").path, "--default-store", "activated",
            ], environment: ["PATH": "/usr/bin:/bin"], output: log.path)
        defer { if process.isRunning { process.signal(SIGKILL) } }

        var answers: [DaemonTransport: [String]] = [:]
        var attempts: [String] = []
        // Under the whole suite, starting modeld can take most of a minute: the limit only
        // guards against a daemon that never serves.
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline,
            !FileManager.default.fileExists(atPath: socket) || !FileManager.default.fileExists(atPath: frames)
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        while ContinuousClock.now < deadline, answers.count < 2 {
            for transport in DaemonTransport.allCases where answers[transport] == nil {
                let started = ContinuousClock.now
                do {
                    answers[transport] = try await DaemonClient.withClient(socketPath: socket, transport: transport) {
                        client in
                        #expect(client.transport == transport)
                        return try await client.stores().map(\.name)
                    }
                    attempts.append("\(transport) ok after \(ContinuousClock.now - started)")
                } catch {
                    attempts.append("\(transport) failed after \(ContinuousClock.now - started): \(error)")
                }
            }
            if answers.count < 2 { try await Task.sleep(for: .milliseconds(50)) }
        }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(answers[.framed] == ["activated"], "the framed socket serves: \(output) \(attempts.suffix(8))")
        #expect(answers[.http2] == ["activated"], "the gRPC socket serves: \(output)")
        process.signal(SIGTERM)
        #expect(try await process.wait() == 0)
        #expect(FileManager.default.fileExists(atPath: socket) && FileManager.default.fileExists(atPath: frames))
    }

    /// READY=1 once serving, watchdog pings at half of WATCHDOG_USEC, STOPPING=1 at shutdown, in
    /// that order; log lines carry journald priorities when standard error is the journal.
    @Test func notificationsArriveInOrder() async throws {
        let directory = try TemporaryDirectory.make(prefix: "sn")
        defer { try? FileManager.default.removeItem(at: directory) }
        let listener = try DatagramListener(path: directory.appendingPathComponent("notify").path)
        defer { listener.close() }
        let log = directory.appendingPathComponent("log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        var status = stat()
        #expect(stat(log.path, &status) == 0)
        let process = try Self.startModeld(
            in: directory,
            environment: [
                "NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "200000",
                "JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino)",
            ], standardError: try FileHandle(forWritingTo: log))
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        var messages: [String] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, messages.filter({ $0.hasPrefix("WATCHDOG=1") }).count < 3 {
            messages += listener.receive()
            try await Task.sleep(for: .milliseconds(20))
        }
        // Reading on, as systemd does, until the daemon has exited.
        messages += try await Self.stop(process, readingOn: listener)
        #expect(process.terminationStatus == 0)

        let kinds = messages.map { $0.split(separator: "\n").first.map(String.init) ?? "" }
        #expect(kinds.first == "READY=1", "\(messages)")
        #expect(
            messages.first?.contains("STATUS=Serving on ") == true
                && messages.first?.contains("MAINPID=\(process.processIdentifier)") == true)
        #expect(kinds.last == "STOPPING=1", "\(messages)")
        let pings = kinds.dropFirst().dropLast()
        #expect(pings.count >= 3 && pings.allSatisfy { $0 == "WATCHDOG=1" }, "\(kinds)")
        #expect(messages.contains { $0.contains("STATUS=Serving 1 store(s), 0 session(s)") }, "\(messages)")

        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(
            !lines.isEmpty && lines.allSatisfy { $0.hasPrefix("<6>") || $0.hasPrefix("<5>") || $0.hasPrefix("<4>") },
            "\(lines)")
        #expect(lines.contains { $0.hasPrefix("<6>modeld 0.1.0 listening on ") }, "\(lines)")
    }
}

extension SystemdTests {
    /// A notification socket nobody reads fills after a few pings; the daemon drops what does
    /// not fit rather than wait, so it still serves, and still stops on SIGTERM.
    @Test func anUnreadNotificationSocketHoldsNothingUp() async throws {
        let directory = try TemporaryDirectory.make(prefix: "sn")
        defer { try? FileManager.default.removeItem(at: directory) }
        let listener = try DatagramListener(path: directory.appendingPathComponent("notify").path)
        defer { listener.close() }
        // A ping every 10 ms: the queue (10 messages on Linux by default) is full within a second.
        let process = try Self.startModeld(
            in: directory, environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "20000"],
            standardError: FileHandle.nullDevice)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // READY=1 is read; nothing after it is, until the daemon has exited.
        var first: [String] = []
        let ready = ContinuousClock.now + .seconds(30)
        while first.isEmpty, ContinuousClock.now < ready {
            first = listener.receive()
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(first.first?.hasPrefix("READY=1") == true, "\(first.prefix(3))")
        // Waits until the queue is full (the daemon's pings fill it within 100 ms; the probe's
        // own pings, the same text, help): from then on, every ping of the daemon finds it full.
        #expect(try await listener.waitUntilFull(), "the notify queue never filled")
        let stores = try await DaemonClient.withClient(socketPath: directory.appendingPathComponent("s").path) {
            try await $0.stores()
        }
        #expect(stores.map(\.name).contains("default"))

        _ = try await Self.stop(process, readingOn: nil)
        #expect(process.terminationStatus == 0)
        let messages = listener.receive()
        #expect(!messages.isEmpty && messages.allSatisfy { $0.hasPrefix("WATCHDOG=1") }, "\(messages.count) messages")
    }
}

extension SystemdTests {
    /// modeld serving on `directory`/s with its stores in `directory`/d, with `environment`
    /// added to this process's.
    static func startModeld(in directory: URL, environment: [String: String], standardError: FileHandle) throws
        -> Process
    {
        let process = Process()
        process.executableURL = try modeldExecutable()
        process.arguments = [
            "--socket", directory.appendingPathComponent("s").path, "--data-dir",
            directory.appendingPathComponent("d").path,
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardError = standardError
        try process.run()
        return process
    }

    /// Sends SIGTERM and waits up to 30 s for the exit (failing the test past that), collecting
    /// what arrives on `listener` meanwhile when one is given.
    static func stop(_ process: Process, readingOn listener: DatagramListener?) async throws -> [String] {
        kill(process.processIdentifier, SIGTERM)
        var messages: [String] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while process.isRunning, ContinuousClock.now < deadline {
            messages += listener?.receive() ?? []
            try await Task.sleep(for: .milliseconds(10))
        }
        messages += listener?.receive() ?? []
        try #require(!process.isRunning, "modeld did not exit within 30 s of SIGTERM")
        return messages
    }
}

/// A Unix datagram socket that collects what is sent to it, as systemd's notification socket does.
final class DatagramListener {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard fd >= 0, bound == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    /// The messages waiting, oldest first.
    func receive() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return messages }
            messages.append(String(decoding: buffer.prefix(count), as: UTF8.self))
        }
    }

    /// Returns true once a datagram sent to the listener finds its queue full (EAGAIN), sending
    /// `WATCHDOG=1` as the probe, or false after 30 s.
    func waitUntilFull() async throws -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard probe >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { Glibc.close(probe) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let message = Array("WATCHDOG=1".utf8)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        probe, message, message.count, Int32(MSG_DONTWAIT), $0,
                        socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK { return true }
            guard sent >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    func close() { Glibc.close(fd) }
}

/// `scripts/install` into a staging root, and `--uninstall` out of it.
@Suite struct InstallTests {
    @Test func installPutsEverythingUnderThePrefixAndUninstallTakesItAway() async throws {
        let root = try TemporaryDirectory.make(prefix: "in")
        defer { try? FileManager.default.removeItem(at: root) }
        let script = SystemdTests.repository.appendingPathComponent("scripts/install")
        var environment = ProcessInfo.processInfo.environment
        environment["DESTDIR"] = root.path
        environment["PREFIX"] = "/opt/modeld"
        let built = try modeldExecutable().deletingLastPathComponent().path
        let install = try await run(script, ["--from", built], environment: environment, in: root)
        #expect(install.status == 0, "\(install)")
        let expected: [(String, Int)] = [
            ("bin/modeld", 0o755), ("bin/modelctl", 0o755), ("lib/systemd/system/modeld.service", 0o644),
            ("lib/systemd/system/modeld.socket", 0o644), ("lib/sysusers.d/modeld.conf", 0o644),
            ("share/modeld/systemd/postgres-tcp.conf", 0o644), ("share/modeld/systemd/postgres-local.conf", 0o644),
            ("share/man/man8/modeld.8", 0o644), ("share/man/man1/modelctl.1", 0o644),
            ("share/bash-completion/completions/modelctl", 0o644), ("share/zsh/site-functions/_modelctl", 0o644),
            ("share/fish/vendor_completions.d/modelctl.fish", 0o644),
        ]
        for (file, mode) in expected {
            let path = root.path + "/opt/modeld/" + file
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == mode, "\(file)")
            #expect(((attributes[.size] as? NSNumber)?.intValue ?? 0) > 0, "\(file)")
        }
        let service = try String(
            contentsOfFile: root.path + "/opt/modeld/lib/systemd/system/modeld.service", encoding: .utf8)
        #expect(
            service.contains("ExecStart=/opt/modeld/bin/modeld --data-dir /var/lib/modeld")
                && !service.contains("@BINDIR@"))
        let manual = try String(contentsOfFile: root.path + "/opt/modeld/share/man/man8/modeld.8", encoding: .utf8)
        #expect(manual.hasPrefix(".TH MODELD 8") && manual.contains("--idle-timeout"))

        let uninstall = try await run(script, ["--uninstall"], environment: environment, in: root)
        #expect(uninstall.status == 0)
        let left =
            FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }
            .filter {
                (try? FileManager.default.attributesOfItem(atPath: root.path + "/" + $0)[.type] as? FileAttributeType)
                    == .typeRegular
            } ?? []
        #expect(left.isEmpty, "\(left)")
    }
}
