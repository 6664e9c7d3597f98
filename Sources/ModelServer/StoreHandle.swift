import Foundation
import ModelCore
import ModelEngine
import ModelStorage
import Synchronization

/// One store the daemon serves: its name, where it lives (its backend's URL), its schema (a
/// container), the signal that wakes history followers, and its watches.
final class StoreHandle: Sendable {
    let name: String
    let location: StoreLocation
    let history = HistorySignal()
    /// The store and entity part of the URI a point read last asked for, for the next to start
    /// from: parsing the store's UUID from text was most of reading a URI.
    let lastURIPrefix = Mutex<PersistentIdentifier.URIPrefix?>(nil)
    /// The store and entity part of the URI a save's answer last wrote, for the next to start
    /// from. Not ``lastURIPrefix``: that one keeps a request's bytes as its client spelt them (a
    /// UUID in capitals reads too), and answers spell URIs one way.
    let lastAnsweredURIPrefix = Mutex<PersistentIdentifier.URIPrefix?>(nil)
    /// The store's watches (live queries), told of saves by one task for them all.
    let watches: WatchHub
    private let current: Mutex<ModelContainer>
    private let migration = Mutex<StagedMigrationMark?>(nil)
    /// The task that wakes history followers on saves other processes make, for a backend that
    /// hears them (``StorageChangeFeed``).
    private let feed = Mutex<Task<Void, Never>?>(nil)
    /// Set when the store is closed because it is dropped (its data deleted next).
    private let dropped = Atomic(false)

    /// Whether the store was closed because it was dropped: a call that then finds it closed
    /// answers NOT_FOUND (``droppedError``), as a watch does.
    var wasDropped: Bool { dropped.load(ordering: .acquiring) }

    /// What a watch or a followed history of the store ends with once it is dropped.
    var droppedError: ModelError {
        ModelError(.notFound, "store '\(name)' was dropped", context: ["store": name])
    }

    /// A staged migration under way: its session, and the versions it went from and is at.
    struct StagedMigrationMark: Sendable {
        let session: String
        let fromVersion: String
        var atVersion: String
    }

    init(name: String, location: StoreLocation, container: ModelContainer) {
        self.name = name
        self.location = location
        self.current = Mutex(container)
        self.watches = WatchHub(backend: container.backend)
        if let changes = container.backend as? any StorageChangeFeed {
            feed.withLock { $0 = Self.follow(changes, signal: history, watches: watches) }
        }
    }

    /// Wakes `signal` and tells `watches` on every save `changes` hears, listening again a
    /// second after the server was lost (followers and watches poll meanwhile), until cancelled.
    private static func follow(
        _ changes: any StorageChangeFeed, signal: HistorySignal, watches: WatchHub
    ) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                try? await changes.followChanges(listening: { signal.notify() }) { token in
                    watches.heard(token)
                    signal.notify()
                    return !Task.isCancelled
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Closes the store (see ``ModelContainer/close()``), `forRemoval` when its data is deleted next.
    func close(forRemoval: Bool = false) async {
        if forRemoval { dropped.store(true, ordering: .releasing) }
        feed.withLock { task in
            task?.cancel()
            task = nil
        }
        watches.close(
            with: forRemoval
                ? droppedError
                : ModelError(
                    .unavailable, "store '\(name)' was closed: watch it again once it is served",
                    context: ["store": name]))
        if forRemoval {
            await container.closeForRemoval()
        } else {
            await container.close()
        }
    }

    /// Refuses with UNAVAILABLE while a staged migration holds the store, unless the caller is
    /// its session.
    func checkAvailable(forSession session: String? = nil) throws(ModelError) {
        guard let mark = migration.withLock({ $0 }), mark.session != session else { return }
        let step =
            mark.atVersion == mark.fromVersion
            ? "from schema version \(mark.fromVersion.prefix(12))"
            : "from schema version \(mark.fromVersion.prefix(12)), now at \(mark.atVersion.prefix(12))"
        throw ModelError(
            .unavailable,
            "store '\(name)' is migrating (a staged migration \(step), session \(mark.session)); try again once it has committed or rolled back",
            context: ["store": name, "session": mark.session])
    }

    /// Marks the store as held by the staged migration of `session`; false if one holds it already.
    func beginMigration(by session: String, fromVersion: String) -> Bool {
        migration.withLock { mark in
            guard mark == nil else { return false }
            mark = StagedMigrationMark(session: session, fromVersion: fromVersion, atVersion: fromVersion)
            return true
        }
    }

    /// The staged migration of `session` reached `version`.
    func migration(by session: String, reached version: String) {
        migration.withLock { mark in
            if mark?.session == session { mark?.atVersion = version }
        }
    }

    /// The staged migration of `session` is over: the store is free again.
    func endMigration(by session: String) {
        migration.withLock { mark in
            if mark?.session == session { mark = nil }
        }
    }

    /// The store with its current schema.
    var container: ModelContainer { current.withLock { $0 } }

    /// The store's backend: its URL scheme.
    var backend: String { location.scheme }

    /// The store's UUID.
    var storeIdentifier: UUID { container.storeIdentifier }

    /// Swaps in a container with a new schema (same backend); the watches of the old schema end.
    func replace(_ container: ModelContainer) {
        let old = current.withLock { current in
            defer { current = container }
            return current.schema.versionHash
        }
        if old != container.schema.versionHash {
            watches.endWatches(
                with: ModelError(
                    .schemaMismatch,
                    "the schema of store '\(name)' changed (version \(old.prefix(12)) to \(container.schema.versionHash.prefix(12))): open the watch again",
                    context: ["store": name]))
        }
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

extension ServerConfiguration {
    /// Checks a store's name (``defaultStore``) as a client's would be.
    public static func checkStoreName(_ name: String) throws(ModelError) {
        try StoreName.validate(name)
    }
}
