import Foundation
import ModelCore

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

/// The stores' own retention settings, by store name, in `<stores>/retention.json`, so that
/// they outlive restarts.
typealias StoreRetentionSettings = StoreSettings<RetentionSetting>

extension StoreSettings<RetentionSetting> {
    convenience init(file: URL) {
        self.init(file: file, contents: "the stores' retention settings")
    }

    func setting(for store: String) -> RetentionSetting? { value(for: store) }

    /// Sets a store's setting; an empty one is removed.
    func set(_ setting: RetentionSetting?, for store: String) throws {
        try set(value: setting?.isEmpty == false ? setting : nil, for: store)
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
