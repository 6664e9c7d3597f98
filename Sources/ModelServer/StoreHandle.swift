import Foundation
import ModelCore
import ModelEngine
import ModelStorage
import Synchronization

/// One store the daemon serves: its name, where it lives (its backend's URL), its schema (a
/// container), and the signal that wakes history followers.
final class StoreHandle: Sendable {
    let name: String
    let location: StoreLocation
    let history = HistorySignal()
    private let current: Mutex<ModelContainer>

    init(name: String, location: StoreLocation, container: ModelContainer) {
        self.name = name
        self.location = location
        self.current = Mutex(container)
    }

    /// The store with its current schema.
    var container: ModelContainer { current.withLock { $0 } }

    /// The store's backend: its URL scheme.
    var backend: String { location.scheme }

    /// The store's UUID.
    var storeIdentifier: UUID { container.storeIdentifier }

    /// Swaps in a container with a new schema (same backend).
    func replace(_ container: ModelContainer) {
        current.withLock { $0 = container }
    }
}

/// Store names: what a client may call a store. Names never become paths by themselves: a store
/// its backend places is always inside `<data directory>/stores`, and the name's rules keep it there.
enum StoreName {
    static let maximumLength = 64

    /// Throws `invalidArgument` unless `name` is 1-64 characters of `a-z`, `0-9`, `_` and `-`.
    static func validate(_ name: String) throws(ModelError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard !name.isEmpty, name.utf8.count <= maximumLength, allowed else {
            let shown = name.count > 80 ? String(name.prefix(77)) + "..." : name
            throw ModelError(
                .invalidArgument,
                "'\(shown.debugDescription.dropFirst().dropLast())' is not a valid store name: use 1 to 64 characters of a-z, 0-9, _ and -",
                context: ["store": String(shown.prefix(80))])
        }
    }
}
