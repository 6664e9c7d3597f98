import Foundation
import ModelCore
import Synchronization

/// A store's own history retention (`SetHistoryRetention`): each limit, when present, replaces
/// the daemon's for that store; a limit of 0 keeps everything.
struct RetentionSetting: Codable, Sendable, Equatable {
    var ageSeconds: Int64?
    var transactions: Int64?

    var isEmpty: Bool { ageSeconds == nil && transactions == nil }
}

/// How much history a store keeps, all settings applied: nil for no limit of that kind.
struct EffectiveRetention: Sendable, Equatable {
    var age: Duration?
    var transactions: Int?
    var ageIsTheStores = false
    var transactionsIsTheStores = false

    var limitsAnything: Bool { age != nil || transactions != nil }
}

/// The stores' own retention settings, by store name: a JSON object in `<stores>/retention.json`,
/// rewritten whole (to a temporary file, then renamed) on every change, so that they outlive
/// restarts.
final class StoreRetentionSettings: Sendable {
    let file: URL
    private let settings = Mutex<[String: RetentionSetting]>([:])

    init(file: URL) {
        self.file = file
    }

    /// Reads the file (none: no settings).
    func load() throws {
        guard let data = try? Data(contentsOf: file) else { return }
        guard let loaded = try? JSONDecoder().decode([String: RetentionSetting].self, from: data) else {
            throw ModelError(
                .storageFailure,
                "\(file.path) is not the stores' retention settings it should be; move it away to start without them")
        }
        settings.withLock { $0 = loaded }
    }

    func setting(for store: String) -> RetentionSetting? {
        settings.withLock { $0[store] }
    }

    /// Whether any store has a setting.
    var isEmpty: Bool { settings.withLock { $0.isEmpty } }

    /// Sets (or, with nil or an empty setting, removes) a store's setting, and writes the file.
    func set(_ setting: RetentionSetting?, for store: String) throws {
        let all = settings.withLock { settings in
            settings[store] = setting?.isEmpty == false ? setting : nil
            return settings
        }
        if all.isEmpty { try SettingsFile.remove(file) } else { try SettingsFile.write(all, to: file) }
    }

    /// The retention of `store`: its own limits where it has them, else the daemon's.
    func effective(for store: String, daemonAge: Duration?, daemonTransactions: Int?) -> EffectiveRetention {
        let own = setting(for: store)
        var result = EffectiveRetention(age: daemonAge, transactions: daemonTransactions)
        if let seconds = own?.ageSeconds {
            result.age = seconds > 0 ? .seconds(seconds) : nil
            result.ageIsTheStores = true
        }
        if let count = own?.transactions {
            result.transactions = count > 0 ? Int(count) : nil
            result.transactionsIsTheStores = true
        }
        return result
    }
}
