import Prometheus
import Synchronization

/// `modeld_rpc_duration_seconds`: how long each method's calls took, in the buckets of
/// ``ModeldMetricsFactory/callBuckets``, written in Prometheus's text format after the registry's
/// metrics (``DaemonMetrics/exposition(_:)``), as swift-prometheus writes a duration histogram.
///
/// Kept here rather than in swift-prometheus's `Histogram<Duration>`, whose `record` compares the
/// duration with every bucket's bound as 128-bit `Duration`s and adds one to each bound it passes:
/// with its lookup by method name, about 1,700 instructions a call, a twentieth of a point
/// read's. Here a call adds one to its own bucket, found by comparing 64-bit nanoseconds, and
/// the counts are summed into Prometheus's cumulative buckets when the text is written.
final class CallDurations: Sendable {
    /// The buckets' upper bounds, in nanoseconds.
    static let bounds: [Int64] = ModeldMetricsFactory.callBuckets.map { bound in
        let (seconds, attoseconds) = bound.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// One method's durations.
    final class Series: Sendable {
        let method: String
        private let state: Mutex<State>

        fileprivate init(method: String) {
            self.method = method
            state = Mutex(State(counts: Array(repeating: 0, count: CallDurations.bounds.count + 1)))
        }

        /// Counts a call that took `nanoseconds`.
        func record(nanoseconds: Int64) {
            let bounds = CallDurations.bounds
            // The first bucket whose bound the duration does not pass (past the last: +Inf).
            var bucket = 0
            while bucket < bounds.count, nanoseconds > bounds[bucket] { bucket += 1 }
            state.withLock { state in
                state.counts[bucket] += 1
                state.sum &+= nanoseconds
            }
        }

        /// The counts so far: each bucket's own (the last: past every bound) and the sum.
        var snapshot: State { state.withLock { $0 } }
    }

    struct State: Sendable {
        /// Calls in each bucket alone, not counting those of the buckets below it.
        var counts: [Int]
        /// Their durations' sum, in nanoseconds.
        var sum: Int64 = 0
    }

    private let series = Mutex<(byMethod: [String: Series], order: [Series])>(([:], []))

    /// The series of `method`, made on its first call.
    func series(of method: String) -> Series {
        series.withLock { series in
            if let known = series.byMethod[method] { return known }
            let made = Series(method: method)
            series.byMethod[method] = made
            series.order.append(made)
            return made
        }
    }

    /// The histogram in Prometheus's text format (version 0.0.4), with its help and type lines;
    /// nothing before the first call.
    func text(help: String) -> String {
        let all = series.withLock { $0.order }
        guard !all.isEmpty else { return "" }
        let name = "modeld_rpc_duration_seconds"
        let bounds = ModeldMetricsFactory.callBuckets.map(\.bucketRepresentation)
        var text = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for series in all {
            let state = series.snapshot
            let label = "method=\"\(series.method)\""
            var cumulative = 0
            for (bound, count) in zip(bounds, state.counts) {
                cumulative += count
                text += "\(name)_bucket{\(label),le=\"\(bound)\"} \(cumulative)\n"
            }
            let count = cumulative + state.counts[bounds.count]
            text += "\(name)_bucket{\(label),le=\"+Inf\"} \(count)\n"
            text += "\(name)_sum{\(label)} \(Duration.nanoseconds(state.sum).bucketRepresentation)\n"
            text += "\(name)_count{\(label)} \(count)\n"
        }
        return text
    }
}
