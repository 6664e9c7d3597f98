@testable import ModelServer
import Prometheus
import Testing

/// `modeld_rpc_duration_seconds`, kept by modeld (``CallDurations``), is written as
/// swift-prometheus writes its own duration histogram with the same buckets, after the same calls.
@Suite struct CallDurationsTests {
    static let help = "How long calls took."

    /// Durations on, just below and just past the bounds, past the last one, and one of zero.
    static let durations: [Int64] = [
        0, 1, 12_345, 49_999, 50_000, 50_001, 99_999, 100_000, 250_001, 1_000_000, 1_000_000_000, 1_999_999_999,
        9_999_999_999, 10_000_000_000, 10_000_000_001, 37_000_000_000,
    ]

    /// What swift-prometheus writes for `calls` (method, nanoseconds), each method a histogram
    /// of its own in one registry.
    private static func prometheusText(_ calls: [(String, Int64)]) -> String {
        let registry = PrometheusCollectorRegistry()
        for (method, nanoseconds) in calls {
            registry.makeDurationHistogram(
                descriptor: MetricNameDescriptor(
                    metricName: "modeld_rpc_duration_seconds", unitName: "", helpText: help),
                labels: [("method", method)], buckets: ModeldMetricsFactory.callBuckets
            ).recordNanoseconds(nanoseconds)
        }
        return registry.emitToString()
    }

    private static func ourText(_ calls: [(String, Int64)]) -> String {
        let durations = CallDurations()
        for (method, nanoseconds) in calls { durations.series(of: method).record(nanoseconds: nanoseconds) }
        return durations.text(help: help)
    }

    @Test func oneMethodsCallsAreWrittenAsSwiftPrometheusWritesThem() {
        let calls = Self.durations.map { ("GetObjects", $0) }
        let ours = Self.ourText(calls)
        #expect(ours == Self.prometheusText(calls))
        #expect(ours.contains(#"modeld_rpc_duration_seconds_bucket{method="GetObjects",le="0.00005"} 5"#), "\(ours)")
        #expect(ours.contains(#"modeld_rpc_duration_seconds_count{method="GetObjects"} 16"#))
    }

    /// Several methods: the same lines (swift-prometheus orders its series by its own tables).
    @Test func severalMethodsHaveTheSameLines() {
        let methods = ["Apply", "GetObjects", "Fetch"]
        let calls = Self.durations.enumerated().map { (methods[$0.offset % methods.count], $0.element) }
        let ours = Self.ourText(calls).split(separator: "\n").sorted()
        #expect(ours == Self.prometheusText(calls).split(separator: "\n").sorted())
        #expect(ours.filter { $0.hasPrefix("# TYPE") }.count == 1)
    }

    @Test func nothingIsWrittenBeforeTheFirstCall() {
        #expect(CallDurations().text(help: Self.help) == "")
    }
}
