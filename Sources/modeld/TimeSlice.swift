import CScheduler
import Foundation

/// The time slice modeld's threads ask Linux's scheduler for (`--time-slice`, 100 µs by default).
///
/// With EEVDF (Linux 6.6 and later) a thread that wakes up runs at once only if its deadline comes
/// before that of the thread running, and a thread's deadline is its slice away (0.75 ms times
/// one plus the log2 of the CPUs by default: 1.5 ms on two). A thread of modeld woken by a
/// request, or by the commit of the group its save was in, would otherwise often wait for a busy
/// neighbour's slice to run out first. A shorter slice (Linux 6.12 and later take one from any
/// thread for itself: `sched_setattr(2)`'s `sched_runtime`, 100 µs to 100 ms) lets it run when
/// woken; it gives no larger share of the CPU, since the weight (the nice value) stays as it is,
/// and a thread that runs past its slice goes behind the others sooner.
enum TimeSlice {
    /// The default: the shortest slice Linux takes.
    static let defaultMicroseconds = 100
    /// What Linux takes: 100 µs to 100 ms.
    static let allowed = 100...100_000

    enum Outcome {
        /// Every thread asked; `threads` of them.
        case set(threads: Int)
        /// The kernel keeps its own slices (before 6.12: the slice read back is not the one asked).
        case notSupported
        /// Refused, with the kernel's errno (EPERM from a seccomp filter; EINVAL for a thread of
        /// another policy than SCHED_OTHER or SCHED_BATCH).
        case refused(errno: Int32)
        /// `--time-slice 0`: nothing asked.
        case left
    }

    /// Asks for `microseconds` for every thread the process has now; the threads they start
    /// afterwards inherit it. Called first thing, before the daemon starts its event loops.
    static func request(microseconds: Int) -> Outcome {
        guard microseconds > 0 else { return .left }
        let nanoseconds = UInt64(microseconds) * 1_000
        // A thread started while the list is read copies its creator's slice, which may not be
        // set yet: the list is read again until it shows no thread not yet asked for.
        var asked = Set<pid_t>()
        for _ in 0..<4 {
            let listed = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?.compactMap {
                pid_t($0)
            }
            // Without /proc, the calling thread alone (0).
            let fresh = (listed.flatMap { $0.isEmpty ? nil : $0 } ?? [0]).filter { !asked.contains($0) }
            if fresh.isEmpty { break }
            for tid in fresh {
                let code = cscheduler_set_slice(tid, nanoseconds)
                // A thread that ended meanwhile (ESRCH) needs nothing.
                if code != 0 && code != ESRCH { return .refused(errno: code) }
                asked.insert(tid)
            }
        }
        guard cscheduler_slice(0) == Int64(nanoseconds) else { return .notSupported }
        return .set(threads: asked.count)
    }

    /// A line for the log: what was asked and what came of it.
    static func describe(_ outcome: Outcome, microseconds: Int) -> String {
        switch outcome {
        case .set(let threads): "threads run with a \(microseconds) µs time slice (\(threads) now)"
        case .notSupported:
            "this kernel keeps its own time slice (Linux 6.12 or later takes one of \(microseconds) µs)"
        case .refused(let code):
            "could not ask for a \(microseconds) µs time slice (\(String(cString: strerror(code)))): the kernel's is kept"
        case .left: "the kernel's time slice is kept (--time-slice 0)"
        }
    }
}
