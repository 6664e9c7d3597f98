#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// Runs programs with posix_spawn, with every signal unblocked and at its default: Foundation's
/// Process passes on the signal mask of the thread that starts it, and programs that wait for
/// SIGALRM or SIGCHLD (pgbench's -T timer, runuser, pg_ctl) then never wake.
enum Spawn {
    /// Runs `arguments` to completion; returns its exit status, what it printed on stdout and
    /// stderr, and the CPU time (user and system, in seconds) it used.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String, cpuSeconds: Double) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString).out")
            .path
        defer { unlink(outputPath) }
        let pid = try start(arguments, outputPath: outputPath)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) == -1 {
            guard errno == EINTR else { throw BenchError("wait4 failed for \(arguments[0]): errno \(errno)") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        let cpu = [usage.ru_utime, usage.ru_stime].reduce(0.0) { $0 + Double($1.tv_sec) + Double($1.tv_usec) / 1e6 }
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output, cpu)
    }

    /// Starts `arguments` without waiting; output to `outputPath` (or /dev/null).
    static func start(_ arguments: [String], outputPath: String = "/dev/null") throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
        guard result == 0 else { throw BenchError("cannot run \(arguments[0]): error \(result)") }
        return pid
    }
}
