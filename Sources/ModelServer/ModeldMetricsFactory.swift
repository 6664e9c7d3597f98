import CoreMetrics
import Prometheus

/// swift-metrics' factory for modeld: swift-prometheus's, with the help text and buckets of each
/// metric modeld records. Prometheus's own checker (`promtool check metrics`) refuses metrics
/// without help text, and swift-prometheus's factory gives none (and would stop the process if a
/// name were registered with two different help texts), so every metric of the daemon, and of
/// the storage layer through the process's bootstrapped factory, is made here, from one table.
public struct ModeldMetricsFactory: CoreMetrics.MetricsFactory {
    public let registry: PrometheusCollectorRegistry
    private let prometheus: PrometheusMetricsFactory

    /// Help texts by metric name.
    static let help: [String: String] = [
        "modeld_rpc_calls_total": "Calls answered, by method and gRPC status code.",
        "modeld_rpc_duration_seconds": "How long calls took, by method (a streamed call until its stream ended).",
        "modeld_saves_total": "Saves committed through the daemon, by store.",
        "modeld_group_commit_saves":
            "Saves committed together in one transaction (SQLite: one sync of the WAL; PostgreSQL: one commit).",
    ]

    /// Latency buckets of calls: 50 µs to 10 s.
    static let callBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(10),
    ]

    static let valueBuckets: [String: [Double]] = [
        "modeld_group_commit_saves": [1, 2, 4, 8, 16, 32, 64, 128, 256]
    ]

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        prometheus = PrometheusMetricsFactory(registry: registry)
    }

    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: Self.help[label] ?? "modeld's \(label).")
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)])
        -> any FloatingPointCounterHandler
    {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: descriptor(label), labels: dimensions,
            buckets: Self.valueBuckets[label] ?? prometheus.defaultValueHistogramBuckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: Self.callBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) { prometheus.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        prometheus.destroyFloatingPointCounter(handler)
    }
    public func destroyRecorder(_ handler: any RecorderHandler) { prometheus.destroyRecorder(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { prometheus.destroyMeter(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { prometheus.destroyTimer(handler) }
}
