import Foundation
import Logging
import ModelCore
import ModelEngine
import ModelStorage

/// Keeps every store's history within its retention: the store's own (`SetHistoryRetention`),
/// else the daemon's (`--history-retention-age`, `--history-retention-transactions`). At each
/// interval, deletes the transactions older than the age and those beyond the count, oldest
/// first, a few thousand per write so that saves wait for none of it long.
struct HistoryRetention: Sendable {
    let age: Duration?
    let count: Int?
    let interval: Duration
    let logger: Logger
    /// Transactions deleted per write.
    static let step: Int64 = 5_000

    init(_ configuration: ServerConfiguration, logger: Logger) {
        age = configuration.historyRetentionAge
        count = configuration.historyRetentionCount
        interval = configuration.historyPruneInterval
        self.logger = logger
    }

    /// The retention of the store `name`.
    func effective(for name: String, in catalog: StoreCatalog) -> EffectiveRetention {
        catalog.retention.effective(for: name, daemonAge: age, daemonTransactions: count)
    }

    /// Applies the retention to the catalog's stores at each interval, until cancelled.
    func run(_ catalog: StoreCatalog) async throws {
        while true {
            try await Task.sleep(for: interval)
            guard age != nil || count != nil || !catalog.retention.isEmpty else { continue }
            for store in catalog.all() {
                let retention = effective(for: store.name, in: catalog)
                guard retention.limitsAnything else { continue }
                do {
                    let deleted = try await Self.prune(store.container, retention)
                    if deleted > 0 { logger.debug("history of '\(store.name)': deleted \(deleted) transaction(s)") }
                } catch let error as ModelError where error.code == .closed {
                    // Dropped or closed meanwhile.
                } catch {
                    logger.warning("history of '\(store.name)' could not be pruned: \(error)")
                }
            }
        }
    }

    /// Deletes what `retention` no longer keeps of `container`'s history; returns how many
    /// transactions went.
    static func prune(_ container: ModelContainer, _ retention: EffectiveRetention) async throws -> Int64 {
        guard let latest = try await container.currentHistoryToken(),
            let oldest = try await container.oldestHistoryToken()
        else { return 0 }
        var target: Int64 = 0
        if let count = retention.transactions { target = latest.rawValue - Int64(count) }
        if let age = retention.age {
            let cutoff = Timestamp(Date().addingTimeInterval(-Double(age.components.seconds)))
            if let old = try await container.newestHistoryToken(savedBefore: cutoff) {
                target = max(target, old.rawValue)
            }
        }
        var through = oldest.rawValue - 1
        while through < target {
            try Task.checkCancellation()
            through = min(target, through + Self.step)
            try await container.deleteHistory(through: HistoryToken(through))
            await Task.yield()
        }
        return max(0, target - oldest.rawValue + 1)
    }
}
