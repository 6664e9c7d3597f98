import Foundation
import ModelCore
import ModelStorage
import Synchronization

/// The stores whose data was there at start-up but could not be opened (``StoreCatalog/unopened``),
/// and those whose server could not be reached then (``StoreCatalog/unreachable``).
extension StoreCatalog {
    /// A store whose data could not be opened at start-up: why, and where (nil when its URL could
    /// not be read). A drop removes its data; a restore with replace puts a backup in its place.
    struct UnopenedStore: Sendable {
        let reason: String
        let location: StoreLocation?
    }

    /// A store whose server could not be reached, and why.
    struct UnreachableStore: Sendable {
        let location: StoreLocation
        var reason: String
        /// Whether it is attached (at a URL of its own) rather than placed by its backend.
        let attached: Bool
    }

    /// Tries again to open the stores whose server could not be reached: each one opened is
    /// served from then on; one that fails otherwise than UNAVAILABLE is told as unopened. Returns
    /// how many are still unreachable. One try at a time: a call while one runs returns at once.
    @discardableResult
    func openUnreachable() async -> Int {
        guard reopening.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return unreachable.withLock { $0.count }
        }
        defer { reopening.store(false, ordering: .releasing) }
        for (name, store) in unreachable.withLock({ Array($0) }) {
            do {
                let handle = try await open(name: name, at: store.location, schema: nil, existingOnly: true)
                if !store.attached { rememberOwner(keptIn: handle) }
                stores.withLock { $0[name] = handle }
                unreachable.withLock { _ = $0.removeValue(forKey: name) }
            } catch let error as ModelError where error.code == .unavailable {
                unreachable.withLock { $0[name]?.reason = error.message }
            } catch {
                unreachable.withLock { _ = $0.removeValue(forKey: name) }
                unopened.withLock { $0[name] = UnopenedStore(reason: Self.reason(error), location: store.location) }
            }
        }
        return unreachable.withLock { $0.count }
    }

    /// Whether `name` is a store whose data could not be opened at start-up.
    func isUnopened(_ name: String) -> Bool {
        unopened.withLock { $0[name] != nil }
    }

    /// Drops the store `name` whose data could not be opened at start-up: its data is removed
    /// (where its URL could be read) and its settings forgotten.
    func dropUnopened(name: String) async throws {
        try await changes.withPermit {
            guard let store = unopened.withLock({ $0[name] }) else {
                throw ModelError(.notFound, "no store named '\(name)'", context: ["store": name])
            }
            if let location = store.location { try await registry.destroy(location) }
            unopened.withLock { _ = $0.removeValue(forKey: name) }
            try attached.remove(name)
            try retention.forget(name)
            try access.forget(name)
        }
    }
}
