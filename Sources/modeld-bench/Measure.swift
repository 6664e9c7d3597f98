#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Latencies of one kind of operation, and their percentiles.
struct Latencies {
    private(set) var samples: [Duration] = []

    mutating func record(_ duration: Duration) { samples.append(duration) }
    mutating func append(contentsOf other: Latencies) { samples += other.samples }

    var count: Int { samples.count }

    /// The `p`th percentile (0...100), in microseconds.
    func percentile(_ p: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let sorted = samples.sorted()
        let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[index].microseconds
    }

    var summary: [String: Double] {
        ["p50_us": percentile(50), "p90_us": percentile(90), "p99_us": percentile(99)]
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

/// What the kernel says of a process: context switches (each one a thread put to sleep and
/// woken: a wake-up) and peak resident memory.
struct ProcessStats {
    var voluntarySwitches = 0
    var involuntarySwitches = 0
    var peakResidentKB = 0
    var residentKB = 0

    /// `pid`'s figures, summed over its threads for the switches.
    static func of(_ pid: Int32) -> ProcessStats {
        var stats = ProcessStats()
        let taskDirectory = "/proc/\(pid)/task"
        for thread in (try? FileManager.default.contentsOfDirectory(atPath: taskDirectory)) ?? [] {
            let fields = read("\(taskDirectory)/\(thread)/status")
            stats.voluntarySwitches += fields["voluntary_ctxt_switches"] ?? 0
            stats.involuntarySwitches += fields["nonvoluntary_ctxt_switches"] ?? 0
        }
        let fields = read("/proc/\(pid)/status")
        stats.peakResidentKB = fields["VmHWM"] ?? 0
        stats.residentKB = fields["VmRSS"] ?? 0
        return stats
    }

    static func ofSelf() -> ProcessStats { of(getpid()) }

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

    /// Voluntary switches between two readings: the times a thread went to sleep and was woken.
    static func wakeUps(from start: ProcessStats, to end: ProcessStats) -> Int {
        end.voluntarySwitches - start.voluntarySwitches
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
