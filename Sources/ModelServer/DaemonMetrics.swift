import CoreMetrics
import Foundation
import GRPCCore
import ModelCore
import ModelStorage
import Prometheus
import Synchronization

/// The daemon's metrics, in Prometheus's text format: recorded through swift-metrics into a
/// registry of swift-prometheus, one per daemon (a test process runs several), which is also the
/// process's swift-metrics backend when the executable bootstraps it with a
/// ``ModeldMetricsFactory`` (the storage layer's group-commit sizes come that way). Counters and histograms are recorded as
/// calls and saves happen; the gauges (sessions, stores, watches, followers, history, bytes on
/// disk) are read when the text is asked for.
final class DaemonMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let factory: ModeldMetricsFactory
    private let calls = Mutex<[CallKey: CoreMetrics.Counter]>([:])
    /// Each method's metrics, by name, for the calls that look them up by it.
    private let methods = Mutex<[String: MethodMetrics]>([:])
    /// `modeld_rpc_duration_seconds`, written after the registry's metrics.
    private let durations = CallDurations()
    private let saves = Mutex<[String: CoreMetrics.Counter]>([:])
    /// The gauges of each store, unregistered when the store is gone.
    private let storeGauges = Mutex<[String: [Prometheus.Gauge]]>([:])

    private struct CallKey: Hashable {
        let method: String
        let code: String
    }

    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        self.factory = ModeldMetricsFactory(registry: registry)
    }

    /// What a method's calls are counted and timed in: its duration series and its count of
    /// calls that succeeded, the most common kind. The calls answered on the event loop hold
    /// theirs (``RPCHandling/answeredAtOnce``); a lookup by name cost a call about 440
    /// instructions.
    final class MethodMetrics: Sendable {
        let method: String
        /// Whether the method's saves are stamped with the caller's user in history.
        let saves: Bool
        fileprivate let durations: CallDurations.Series
        fileprivate let succeeded: CoreMetrics.Counter

        fileprivate init(method: String, durations: CallDurations.Series, succeeded: CoreMetrics.Counter) {
            self.method = method
            saves = RPCHandling.savingMethods.contains(method)
            self.durations = durations
            self.succeeded = succeeded
        }
    }

    /// The metrics of `method`, made on its first call.
    func metrics(of method: String) -> MethodMetrics {
        Self.metric(method, in: methods) {
            MethodMetrics(
                method: method, durations: durations.series(of: method),
                succeeded: Self.callCounter(method: method, code: "ok", factory: factory))
        }
    }

    /// Counts a call of `method` that ended with `code` (nil: it succeeded), and its duration.
    func called(_ method: MethodMetrics, code: RPCError.Code?, since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        if let code {
            let key = CallKey(method: method.method, code: "\(code)")
            Self.metric(key, in: calls) { Self.callCounter(method: key.method, code: key.code, factory: factory) }
                .increment()
        } else {
            method.succeeded.increment()
        }
        // Taken apart once: each `components` divides a 128-bit count (about 190 instructions).
        let (seconds, attoseconds) = elapsed.components
        method.durations.record(nanoseconds: seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
    }

    private static func callCounter(method: String, code: String, factory: ModeldMetricsFactory) -> CoreMetrics.Counter
    {
        CoreMetrics.Counter(
            label: "modeld_rpc_calls_total", dimensions: [("method", method), ("code", code)], factory: factory)
    }

    /// Counts a save to `store` that committed.
    func saved(in store: String) {
        Self.metric(store, in: saves) {
            CoreMetrics.Counter(label: "modeld_saves_total", dimensions: [("store", store)], factory: factory)
        }.increment()
    }

    /// Forgets a dropped store's count of saves, so that a store made later under its name counts
    /// from zero, and a daemon that makes and drops a store per test, with no scrape in between
    /// to drop them (``exposition(_:)``), does not keep a counter per store it ever served (nor
    /// pay to copy them all: swift-prometheus copies a family's series to add one).
    func storeDropped(_ store: String) {
        saves.withLock { $0.removeValue(forKey: store) }?.destroy()
    }

    /// The metric kept for `key` in `metrics`, made by `make` the first time.
    private static func metric<Key: Hashable & Sendable, Metric: Sendable>(
        _ key: Key, in metrics: borrowing Mutex<[Key: Metric]>, make: () -> Metric
    ) -> Metric {
        metrics.withLock { metrics in
            if let metric = metrics[key] { return metric }
            let metric = make()
            metrics[key] = metric
            return metric
        }
    }

    /// What the daemon looks like now, as gauges, then everything in the text format.
    func exposition(_ core: DaemonCore) async -> String {
        let stores = core.catalog.all()
        gauge("modeld_stores", help: "Stores served.").set(stores.count)
        gauge("modeld_open_sessions", help: "Sessions open.").set(core.sessions.count)
        gauge("modeld_open_watches", help: "Watches (live queries) open.").set(
            stores.reduce(0) { $0 + $1.watches.watchCount })
        gauge("modeld_watch_memory_bytes", help: "Bytes the open watches hold, about (at most --max-watch-memory).")
            .set(core.watchMemory.held)
        gauge("modeld_history_followers", help: "History streams open (followers).").set(
            core.streams.count(of: .history))
        gauge("modeld_streamed_fetches", help: "Fetches streamed as the store reads them.").set(
            core.streams.streamingFetches)
        gauge("modeld_uptime_seconds", help: "Seconds since the daemon started.").set(
            Int((ContinuousClock.now - core.startedAt).components.seconds))
        var gauges: [String: [Prometheus.Gauge]] = [:]
        for store in stores {
            let labels = [("store", store.name), ("backend", store.backend)]
            func storeGauge(_ name: String, help: String) -> Prometheus.Gauge {
                let made = gauge(name, labels, help: help)
                gauges[store.name, default: []].append(made)
                return made
            }
            if let size = Self.bytesOnDisk(store) {
                storeGauge("modeld_store_size_bytes", help: "Bytes the store's files take on disk.").set(size)
            }
            guard let (kept, latest) = try? await Self.history(of: store) else { continue }
            storeGauge("modeld_store_history_token", help: "The store's latest history token.").set(latest)
            if let kept {
                storeGauge("modeld_store_history_transactions", help: "History transactions kept.").set(kept)
            }
        }
        let gone = storeGauges.withLock { previous in
            defer { previous = gauges }
            return previous.filter { gauges[$0.key] == nil }.flatMap(\.value)
        }
        for gauge in gone { registry.unregisterGauge(gauge) }
        let dropped = saves.withLock { saves in
            let dropped = saves.filter { name, _ in !stores.contains { $0.name == name } }
            for name in dropped.keys { saves[name] = nil }
            return dropped.values
        }
        for counter in dropped { counter.destroy() }
        return registry.emitToString()
            + durations.text(help: ModeldMetricsFactory.help["modeld_rpc_duration_seconds"] ?? "")
    }

    private func gauge(_ name: String, _ labels: [(String, String)] = [], help: String) -> Prometheus.Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
    }

    /// The size of an SQLite store's file and WAL; nil for a store without files of the daemon's
    /// (memory, PostgreSQL).
    static func bytesOnDisk(_ store: StoreHandle) -> Int? {
        guard let path = store.location.filePath else { return nil }
        var total = 0
        for suffix in ["", "-wal"] {
            var info = stat()
            if stat(path + suffix, &info) == 0 { total += Int(info.st_blocks) * 512 }
        }
        return total
    }

    /// How many history transactions the store keeps (when its backend says cheaply) and its
    /// latest token (0 before any save). Tokens are contiguous, pruning taking the oldest first,
    /// so the oldest kept and the latest count them.
    static func history(of store: StoreHandle) async throws -> (kept: Int64?, latest: Int64) {
        let backend = store.container.backend
        let latest = try await backend.currentHistoryToken()?.rawValue ?? 0
        guard let extent = backend as? any StorageHistoryExtent else { return (nil, latest) }
        guard let oldest = try await extent.oldestHistoryToken()?.rawValue else { return (0, latest) }
        return (latest - oldest + 1, latest)
    }
}

extension Prometheus.Gauge {
    func set(_ value: Int) { set(to: Double(value)) }
    func set(_ value: Int64) { set(to: Double(value)) }
}
