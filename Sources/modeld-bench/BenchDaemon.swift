#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelTesting
import SystemdHarness

/// The daemon a run measures: spawned by the bench (``ModeldProcess``), or installed
/// (``InstalledDaemon``).
protocol BenchDaemon: Sendable {
    /// The socket to call it on (its framed socket beside it).
    var socketPath: String { get }
    /// Its process, as this machine numbers it (for its CPU time, wake-ups and memory).
    var processIdentifier: Int32 { get }
    /// Stops it and starts it again; answers once it serves.
    func restartDaemon() async throws
    /// Stops it and removes what it kept.
    func remove() async
}

extension ModeldProcess: BenchDaemon {
    func restartDaemon() async throws { try await restart() }
}

/// modeld as operators run it: the shipped units (`systemd/`) under a real systemd, Debian's, as
/// init of namespaces of its own (``NestedSystemd``, as `InstalledUnitTests` runs them): the
/// socket unit listens, the first connection starts the service as the `modeld` user, with every
/// sandboxing setting of the unit. One drop-in adds what the bench's spawned daemon is given on
/// its command line (a 256 MiB message limit for the bulk load, warnings only in the log).
///
/// Its stores live in `dataDirectory` on this machine's disk, mounted at `/var/lib/modeld`, as
/// the spawned daemon's do (the namespace's own `/var/lib` is memory); the PostgreSQL cluster's
/// socket directory is mounted at `/run/postgresql`, where a Debian server keeps it.
final class InstalledDaemon: BenchDaemon {
    private let systemd: NestedSystemd
    private let executable: String
    let socketPath: String

    static func boot(executable: URL, units: URL, dataDirectory: URL, postgresDirectory: URL) async throws
        -> InstalledDaemon
    {
        guard getuid() == 0 else {
            throw BenchError("--installed runs systemd in namespaces of its own, which needs root")
        }
        let resolved = executable.resolvingSymlinksInPath().path
        for hidden in ["/tmp/", "/var/tmp/", "/home/", "/root/"] where resolved.hasPrefix(hidden) {
            throw BenchError(
                "--installed: the unit cannot run \(resolved): its sandbox hides \(hidden) (PrivateTmp=, ProtectHome=)"
            )
        }
        func unit(_ name: String) throws -> String {
            try String(contentsOf: units.appendingPathComponent(name), encoding: .utf8)
                .replacingOccurrences(of: "@BINDIR@/modeld", with: resolved)
        }
        let systemd = try await NestedSystemd.boot(
            units: ["modeld.service": try unit("modeld.service"), "modeld.socket": try unit("modeld.socket")],
            sysusers: ["modeld.conf": try unit("modeld.sysusers")],
            binds: [dataDirectory.path: "/var/lib/modeld", postgresDirectory.path: "/run/postgresql"])
        let daemon = InstalledDaemon(systemd: systemd, executable: resolved)
        do {
            let dropIns = systemd.path("/run/systemd/system/modeld.service.d")
            try FileManager.default.createDirectory(atPath: dropIns, withIntermediateDirectories: true)
            try "[Service]\nEnvironment=MODELD_MAX_MESSAGE_SIZE=256M MODELD_LOG_LEVEL=warning\n".write(
                toFile: dropIns + "/bench.conf", atomically: true, encoding: .utf8)
            try await daemon.systemctl(["daemon-reload"])
            try await daemon.systemctl(["start", "modeld.socket"])
        } catch {
            await daemon.remove()
            throw error
        }
        return daemon
    }

    private init(systemd: NestedSystemd, executable: String) {
        self.systemd = systemd
        self.executable = executable
        socketPath = systemd.path("/run/modeld/modeld.sock")
    }

    /// The service's main process: the child of the namespace's systemd that runs modeld (none
    /// before the first connection starts it).
    var processIdentifier: Int32 {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After the command's name: state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == systemd.pid else { continue }
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == executable {
                return pid
            }
        }
        return -1
    }

    func restartDaemon() async throws {
        try await systemctl(["restart", "modeld.service"])
    }

    func remove() async {
        await systemd.shutDown(stopping: ["modeld.service", "modeld.socket"])
    }

    /// Runs `systemctl` in the namespace; a failure says what systemd and modeld printed.
    private func systemctl(_ arguments: [String]) async throws {
        let result = try await systemd.systemctl(arguments)
        guard result.status == 0 else {
            throw BenchError(
                "systemctl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.error)\n"
                    + String(systemd.log.suffix(3000)))
        }
    }
}
