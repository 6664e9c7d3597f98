#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelTesting
import Synchronization

/// Latencies of one kind of operation, and their percentiles.
struct Latencies {
    private(set) var samples: [Duration] = []

    mutating func record(_ duration: Duration) { samples.append(duration) }
    mutating func append(contentsOf other: Latencies) { samples += other.samples }

    var count: Int { samples.count }

    /// The `p`th percentile (0...100), in microseconds.
    func percentile(_ p: Double) -> Double {
        Self.percentile(p, of: samples.sorted())
    }

    private static func percentile(_ p: Double, of sorted: [Duration]) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[index].microseconds
    }

    /// The mean, in microseconds: a rate is its inverse, so a few long calls past the 99th
    /// percentile can move a rate that the percentiles do not show.
    var mean: Double {
        guard !samples.isEmpty else { return .nan }
        return samples.reduce(Duration.zero, +).microseconds / Double(samples.count)
    }

    /// The percentiles and the mean, the samples sorted once.
    var summary: [String: Double] {
        let sorted = samples.sorted()
        func at(_ p: Double) -> Double { Self.percentile(p, of: sorted) }
        return [
            "p50_us": at(50), "p90_us": at(90), "p99_us": at(99), "p99.9_us": at(99.9), "max_us": at(100),
            "mean_us": mean,
        ]
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    var microseconds: Double { seconds * 1e6 }
}

/// Times `body`.
func measure<T>(_ body: () async throws -> T) async rethrows -> (T, Duration) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = try await body()
    return (result, clock.now - start)
}

/// What the kernel says of a process: voluntary context switches (each one a thread put to
/// sleep and woken: a wake-up), CPU time, and resident memory (now and at its peak).
struct ProcessStats {
    /// Each living thread's voluntary switches, by thread identifier.
    var voluntarySwitches: [String: Int] = [:]
    var peakResidentKB = 0
    var residentKB = 0
    /// User and system CPU time, in seconds.
    var cpuSeconds = 0.0

    /// `pid`'s figures, with the switches of each of its threads.
    static func of(_ pid: Int32) -> ProcessStats {
        var stats = ProcessStats()
        let taskDirectory = "/proc/\(pid)/task"
        for thread in (try? FileManager.default.contentsOfDirectory(atPath: taskDirectory)) ?? [] {
            let fields = read("\(taskDirectory)/\(thread)/status")
            stats.voluntarySwitches[thread] = fields["voluntary_ctxt_switches"] ?? 0
        }
        let fields = read("/proc/\(pid)/status")
        stats.peakResidentKB = fields["VmHWM"] ?? 0
        stats.residentKB = fields["VmRSS"] ?? 0
        stats.cpuSeconds = cpuSeconds(of: pid)
        return stats
    }

    /// The CPU time `pid`'s threads have run, living and exited: its process CPU clock, which
    /// the scheduler keeps in nanoseconds. The clock-tick counts of /proc/<pid>/stat (10 ms
    /// each) made a per-call figure over 200 calls a multiple of 50 µs.
    private static func cpuSeconds(of pid: Int32) -> Double {
        var clock = clockid_t()
        var time = timespec()
        if clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &time) == 0 {
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        return tickSeconds(of: pid)
    }

    /// utime + stime from /proc/<pid>/stat.
    private static func tickSeconds(of pid: Int32) -> Double {
        guard let fields = statFields(of: pid) else { return 0 }
        return (fields[11] + fields[12]) / ticksPerSecond
    }

    /// The numeric fields of /proc/<pid>/stat after the parenthesised name, from the state on
    /// (index 1 is the parent, 11 and 12 user and system time in clock ticks, 13 and 14 those of
    /// waited-for children); the state itself reads as 0.
    static func statFields(of pid: Int32) -> [Double]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ").map { Double($0) ?? 0 }
        return fields.count > 14 ? fields : nil
    }

    /// Clock ticks per second, the unit of /proc/<pid>/stat's times.
    static var ticksPerSecond: Double { Double(sysconf(Int32(_SC_CLK_TCK))) }

    /// This process's figures; its switches include those of the threads that ended
    /// (``recordEndingThread()``), which /proc no longer lists (or lists while they exit: they
    /// are counted once).
    static func ofSelf() -> ProcessStats {
        var stats = of(getpid())
        let (switches, threads) = endedThreads.withLock { ($0.switches, $0.threads) }
        for thread in threads { stats.voluntarySwitches[thread] = nil }
        stats.voluntarySwitches["ended"] = switches
        return stats
    }

    /// The voluntary switches of this process's threads that have ended, as they told them, and
    /// their identifiers.
    private static let endedThreads = Mutex((switches: 0, threads: Set<String>()))

    /// Adds the calling thread's switches to those of ended threads: what a thread of the bench's
    /// own (a blocking client's) calls last.
    static func recordEndingThread() {
        let switches = read("/proc/thread-self/status")["voluntary_ctxt_switches"] ?? 0
        // /proc/thread-self links to <pid>/task/<tid>.
        let thread =
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "")
            .split(separator: "/").last.map(String.init) ?? ""
        endedThreads.withLock {
            $0.switches += switches
            $0.threads.insert(thread)
        }
    }

    private static func read(_ path: String) -> [String: Int] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let number = parts[1].split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
            if let number { fields[String(parts[0])] = number }
        }
        return fields
    }

    /// Voluntary switches between two readings: the times a thread went to sleep and was woken,
    /// by the threads living at the second (all of a thread's switches if it was born since).
    /// A thread that ended in between is not counted: subtracting sums over the threads of
    /// each reading made the figure negative when one ended.
    static func wakeUps(from start: ProcessStats, to end: ProcessStats) -> Int {
        end.voluntarySwitches.reduce(0) { sum, thread in sum + thread.value - (start.voluntarySwitches[thread.key] ?? 0)
        }
    }
}

/// A process that spins on a core for as long as the run lasts, for the loaded run: on these
/// virtual machines a round trip to an idle core costs several times more (waking it is slow).
final class BusyLoad {
    private var pid: pid_t?

    func start() throws {
        pid = try Spawn.start(["/bin/sh", "-c", "while :; do :; done"])
    }

    func stop() {
        guard let pid else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        self.pid = nil
    }
}

/// What calls cost both processes, summed over measured runs: wake-ups and CPU time per call.
struct CallCosts {
    var calls = 0
    var daemonWakeUps = 0, clientWakeUps = 0
    var daemonCPU = 0.0, clientCPU = 0.0

    /// Runs `body`, which makes `count` calls, and adds what they cost.
    mutating func measure<T>(_ count: Int, daemon: any BenchDaemon, _ body: () async throws -> T) async rethrows -> T {
        try await measure(daemon: daemon, calls: { _ in count }, body)
    }

    /// Runs `body` and adds what its calls cost; `calls` says from its result how many it made.
    mutating func measure<T>(daemon: any BenchDaemon, calls count: (T) -> Int, _ body: () async throws -> T)
        async rethrows -> T
    {
        let daemonBefore = ProcessStats.of(daemon.processIdentifier), clientBefore = ProcessStats.ofSelf()
        let result = try await body()
        let daemonAfter = ProcessStats.of(daemon.processIdentifier), clientAfter = ProcessStats.ofSelf()
        calls += count(result)
        daemonWakeUps += ProcessStats.wakeUps(from: daemonBefore, to: daemonAfter)
        clientWakeUps += ProcessStats.wakeUps(from: clientBefore, to: clientAfter)
        daemonCPU += daemonAfter.cpuSeconds - daemonBefore.cpuSeconds
        clientCPU += clientAfter.cpuSeconds - clientBefore.cpuSeconds
        return result
    }

    private func perCall(_ total: Double) -> Double { calls == 0 ? 0 : total / Double(calls) }

    var summary: [String: Double] {
        [
            "daemon_wakeups_per_call": perCall(Double(daemonWakeUps)),
            "client_wakeups_per_call": perCall(Double(clientWakeUps)),
            "daemon_cpu_us_per_call": perCall(daemonCPU) * 1e6, "client_cpu_us_per_call": perCall(clientCPU) * 1e6,
        ]
    }

    var description: String {
        "wake-ups daemon \(format(perCall(Double(daemonWakeUps)))), client \(format(perCall(Double(clientWakeUps)))); "
            + "CPU daemon \(Int(perCall(daemonCPU) * 1e6)) µs, client \(Int(perCall(clientCPU) * 1e6)) µs"
    }
}

/// What PostgreSQL's transactions cost over pgbench runs: the CPU of the server's processes and
/// of pgbench, per transaction.
struct PostgresCosts {
    var transactions = 0
    var serverCPU = 0.0, clientCPU = 0.0

    mutating func add(_ run: PostgresCluster.PgbenchResult) {
        transactions += run.latencies.count
        serverCPU += run.serverCPUSeconds
        clientCPU += run.clientCPUSeconds
    }

    private func perCall(_ total: Double) -> Double { transactions == 0 ? 0 : total / Double(transactions) }

    var summary: [String: Double] {
        ["server_cpu_us_per_call": perCall(serverCPU) * 1e6, "client_cpu_us_per_call": perCall(clientCPU) * 1e6]
    }

    var description: String {
        "CPU server \(Int(perCall(serverCPU) * 1e6)) µs, pgbench \(Int(perCall(clientCPU) * 1e6)) µs"
    }
}
