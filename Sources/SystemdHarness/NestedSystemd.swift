import Foundation
import Synchronization

/// A real systemd (Debian's `/lib/systemd/systemd`) running as init of PID, mount, UTS and IPC
/// namespaces of its own (`unshare`, with `container=` set, as systemd-nspawn does), for running
/// the installed units as systemd runs them: these machines have no systemd as init.
///
/// The namespace shares this machine's file systems and kernel, so it sees none of the machine's
/// units and generators: tmpfs mounts hide `/usr/lib/systemd/system`, the generators and
/// `/etc/systemd/system`, and the targets units depend on by default (`sysinit.target`,
/// `sockets.target`, …) are empty ones. The machine's own would act on what is shared: its
/// `systemd-tmpfiles-setup.service` (pulled in by `sysinit.target`) empties the shared `/tmp`,
/// its udev trigger and sysctl services reach the kernel. Inside, `/run` and `/var/lib`
/// (StateDirectory=) are new tmpfs mounts, `/etc` is a copy (`systemd-sysusers` makes the units'
/// users there, not on this machine), and ``path(_:)`` reaches a path as the namespace sees it.
///
/// The cgroup hierarchies are shared too, and systemd lays its slices out at their roots: two
/// nested systemds at once would put their services in the same cgroups, and stopping one's
/// would kill the other's. So one runs at a time: ``boot(units:sysusers:binds:)`` refuses a
/// second (the suites that use it are serialized).
package final class NestedSystemd: @unchecked Sendable { // `process` is polled by one task at a time.
    package let directory: URL
    private let process: SpawnedProcess
    /// The namespace's init (systemd), as this machine numbers it.
    package let pid: pid_t

    /// Boots systemd with `units` (file name → text) in `/run/systemd/system`, `sysusers` (file
    /// name → text) applied with systemd-sysusers, and `binds` (host path → path inside) mounted;
    /// answers once `systemctl is-system-running` says it runs.
    package static func boot(units: [String: String], sysusers: [String: String], binds: [String: String] = [:])
        async throws -> NestedSystemd
    {
        guard
            running.withLock({ running in
                defer { running = true }
                return !running
            })
        else {
            throw NestedSystemdError("another nested systemd runs; they would share cgroups (serialize the tests)")
        }
        do {
            return try await start(units: units, sysusers: sysusers, binds: binds)
        } catch {
            running.withLock { $0 = false }
            throw error
        }
    }

    /// Whether a nested systemd runs now.
    private static let running = Mutex(false)

    private static func start(units: [String: String], sysusers: [String: String], binds: [String: String])
        async throws -> NestedSystemd
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nsd-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("units"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("sysusers"), withIntermediateDirectories: true)
        for (name, text) in units {
            try text.write(to: directory.appendingPathComponent("units/\(name)"), atomically: true, encoding: .utf8)
        }
        for (name, text) in sysusers {
            try text.write(to: directory.appendingPathComponent("sysusers/\(name)"), atomically: true, encoding: .utf8)
        }
        let mounts = binds.map { "mkdir -p '\($0.value)' && mount --bind '\($0.key)' '\($0.value)'" }
        let targets = [
            "sysinit", "basic", "sockets", "network", "network-online", "network-pre", "multi-user", "local-fs",
            "local-fs-pre", "remote-fs", "paths", "timers", "slices", "swap", "shutdown", "umount", "nested",
        ]
        let script = """
            set -e
            cp -a /etc '\(directory.path)/etc' && mount --bind '\(directory.path)/etc' /etc
            mount -t tmpfs -o mode=0755 tmpfs /etc/systemd/system
            systemd-sysusers '\(directory.path)'/sysusers/*
            mount -t tmpfs -o mode=0755 tmpfs /run
            mount -t tmpfs -o mode=0755 tmpfs /var/lib
            for hidden in /usr/lib/systemd/system /usr/lib/systemd/system-generators /usr/local/lib/systemd/system \\
                /lib/systemd/system /lib/systemd/system-generators; do
                if [ -d "$hidden" ]; then mount -t tmpfs -o mode=0755 tmpfs "$hidden"; fi
            done
            mkdir -p /run/systemd/system && cp '\(directory.path)'/units/* /run/systemd/system/
            for target in \(targets.joined(separator: " ")); do
                printf '[Unit]\\nDescription=%s (empty)\\nDefaultDependencies=no\\n' $target > /run/systemd/system/$target.target
            done
            \(mounts.joined(separator: "\n"))
            exec env container=modeld-tests /lib/systemd/systemd --system --unit=nested.target \\
                --log-target=console --default-standard-output=inherit --default-standard-error=inherit
            """
        try script.write(to: directory.appendingPathComponent("boot.sh"), atomically: true, encoding: .utf8)
        let process = try SpawnedProcess(
            "/usr/bin/unshare",
            [
                "--mount", "--pid", "--uts", "--ipc", "--fork", "--mount-proc", "--propagation", "private", "/bin/sh",
                directory.path + "/boot.sh",
            ],
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], output: directory.appendingPathComponent("log").path
        )
        // unshare's one child is the namespace's init.
        var pid: pid_t?
        let deadline = ContinuousClock.now + .seconds(60)
        while pid == nil, ContinuousClock.now < deadline, process.isRunning {
            let children =
                (try? String(
                    contentsOfFile: "/proc/\(process.processIdentifier)/task/\(process.processIdentifier)/children",
                    encoding: .utf8)) ?? ""
            pid = children.split(separator: " ").first.flatMap { pid_t($0) }
            if pid == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        guard let pid else {
            let log = (try? String(contentsOf: directory.appendingPathComponent("log"), encoding: .utf8)) ?? ""
            process.signal(SIGKILL)
            throw NestedSystemdError("systemd did not start in its namespace: \(log)")
        }
        let nested = NestedSystemd(directory: directory, process: process, pid: pid)
        var state = ""
        while ContinuousClock.now < deadline, process.isRunning {
            state =
                (try? await nested.systemctl(["is-system-running"]).output)?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if state == "running" || state == "degraded" { return nested }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("log"), encoding: .utf8)) ?? ""
        await nested.shutDown(stopping: [])
        throw NestedSystemdError("systemd in its namespace did not come up (last state '\(state)'): \(log)")
    }

    private init(directory: URL, process: SpawnedProcess, pid: pid_t) {
        self.directory = directory
        self.process = process
        self.pid = pid
    }

    /// Runs `systemctl` with `arguments` in the namespace.
    package func systemctl(_ arguments: [String]) async throws -> CommandResult {
        try await run(["systemctl", "--no-pager"] + arguments)
    }

    /// Runs a command in the namespace (its mounts and processes), as root.
    package func run(_ command: [String]) async throws -> CommandResult {
        try await SystemdHarness.run(
            URL(fileURLWithPath: "/usr/bin/nsenter"), ["-t", "\(pid)", "-m", "-p"] + command, in: directory)
    }

    /// A path as the namespace sees it, reached from this machine (through /proc).
    package func path(_ inside: String) -> String { "/proc/\(pid)/root" + inside }

    /// Stops `units`, then asks systemd to exit (which ends the namespace), or kills it if that
    /// takes more than a minute; removes the directory.
    package func shutDown(stopping units: [String]) async {
        if process.isRunning {
            _ = try? await systemctl(["stop"] + units)
            _ = try? await systemctl(["--force", "exit"])
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning {
            kill(pid, SIGKILL)
            _ = try? await process.wait()
        }
        try? FileManager.default.removeItem(at: directory)
        if !process.isRunning { Self.running.withLock { $0 = false } }
    }

    /// What systemd and the services printed.
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("log"), encoding: .utf8)) ?? ""
    }
}

package struct NestedSystemdError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
