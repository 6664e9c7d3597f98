import Foundation
import ModelCore

/// Opens, finds and destroys stores of one URL scheme: what a backend module registers. Only
/// ``scheme``, ``open(_:)`` and ``destroy(_:)`` are required; the rest have defaults that fit a
/// backend whose stores live elsewhere than in files of the daemon's data directory.
public protocol StorageBackendFactory: Sendable {
    /// The URL scheme this factory serves (`sqlite`, `memory`, …), lowercase.
    var scheme: String { get }
    /// Parses a URL of this scheme, checking what follows the scheme. By default the rest is
    /// kept as it is.
    func location(parsing url: String) throws(ModelError) -> StoreLocation
    /// Where a daemon keeps a store named `name` that it places itself, its stores' directory
    /// being `directory` (`<directory>/<name>.sqlite`, `memory:<name>`); nil when a store of this
    /// backend needs a URL of its own (the default).
    func location(forStoreNamed name: String, in directory: URL) -> StoreLocation?
    /// The stores a daemon placed in `directory` earlier, by name, for a daemon that starts (none
    /// by default). A backend may also tidy the directory here (before any store is opened).
    func storesPlaced(in directory: URL) throws -> [(name: String, location: StoreLocation)]
    /// Whether data is stored at `location` already (false by default).
    func hasData(at location: StoreLocation) -> Bool
    /// Whether the store's data outlives the process (true by default): a daemon remembers the
    /// stores it did not place itself only when they do.
    var isPersistent: Bool { get }
    /// Opens the store at `location`, creating it if it does not exist.
    func open(_ location: StoreLocation) async throws -> any StorageBackend
    /// Opens the store at `location` only if it exists, `notFound` otherwise: what a daemon that
    /// restarts opens at the URLs it remembers, so that a store dropped by another daemon (or a
    /// file moved away) is not made anew, empty and under a new UUID. By default ``open(_:)``.
    func openExisting(_ location: StoreLocation) async throws -> any StorageBackend
    /// Opens the store at `location` and applies `schema` (see `StorageBackend.apply(schema:)`).
    /// By default ``open(_:)`` then `apply(schema:)`; a factory that can do both in one write
    /// (one sync for a new store) does.
    func open(_ location: StoreLocation, applying schema: Schema) async throws -> any StorageBackend
    /// Removes the store's data; the store must be closed.
    func destroy(_ location: StoreLocation) async throws
    /// Returns once the work this factory began in the background (emptying a dropped store's
    /// files) has finished: a daemon that stops waits for it, so that none of its work outlives
    /// it. Nothing to wait for by default.
    func finishBackgroundWork() async
}

extension StorageBackendFactory {
    public func location(parsing url: String) throws(ModelError) -> StoreLocation {
        let location = try StoreLocation(url: url)
        guard location.scheme == scheme else {
            throw ModelError(.invalidArgument, "'\(url)' is not a \(scheme): URL")
        }
        return location
    }

    public func location(forStoreNamed name: String, in directory: URL) -> StoreLocation? { nil }

    public func storesPlaced(in directory: URL) throws -> [(name: String, location: StoreLocation)] { [] }

    public func hasData(at location: StoreLocation) -> Bool { false }

    public var isPersistent: Bool { true }

    public func finishBackgroundWork() async {}

    public func openExisting(_ location: StoreLocation) async throws -> any StorageBackend { try await open(location) }

    public func open(_ location: StoreLocation, applying schema: Schema) async throws -> any StorageBackend {
        let backend = try await open(location)
        do {
            try await backend.apply(schema: schema)
        } catch {
            await backend.close()
            throw error
        }
        return backend
    }
}

/// Chooses a backend by the scheme of a store URL. A value: build one with the factories you
/// need (the StandardBackends module offers one with SQLite and memory). Any registered scheme
/// can be opened; nothing above this layer knows which backends exist.
public struct StorageRegistry: Sendable {
    private var factories: [String: any StorageBackendFactory]

    public init(_ factories: [any StorageBackendFactory] = []) {
        self.factories = Dictionary(factories.map { ($0.scheme, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Adds (or replaces) the factory for its scheme.
    public mutating func register(_ factory: any StorageBackendFactory) {
        factories[factory.scheme] = factory
    }

    /// Returns once every factory's background work has finished (``StorageBackendFactory/finishBackgroundWork()``).
    public func finishBackgroundWork() async {
        for factory in factories.values { await factory.finishBackgroundWork() }
    }

    /// The schemes this registry can open.
    public var schemes: [String] { factories.keys.sorted() }

    /// The factory of `scheme`, or `invalidArgument` naming the schemes there are.
    public func factory(for scheme: String) throws(ModelError) -> any StorageBackendFactory {
        guard let factory = factories[scheme.lowercased()] else {
            throw ModelError(
                .invalidArgument,
                "no storage backend for scheme '\(scheme)'; available: \(schemes.joined(separator: ", "))",
                context: ["scheme": scheme])
        }
        return factory
    }

    /// Parses `url` with the factory of its scheme.
    public func location(parsing url: String) throws(ModelError) -> StoreLocation {
        try factory(for: StoreLocation.scheme(of: url)).location(parsing: url)
    }

    /// Opens the store at `url`, applying `schema` when given (see
    /// `StorageBackend.apply(schema:)`); a store that cannot take the schema is closed again.
    public func open(url: String, applying schema: Schema? = nil) async throws -> any StorageBackend {
        try await open(try location(parsing: url), applying: schema)
    }

    /// Opens the store at `location`, applying `schema` when given. With `labels`, they are kept
    /// in the store (a new one, or one just installed from a backup, whose labels they replace):
    /// its backend's factory must be ``StorageLabelling``.
    public func open(_ location: StoreLocation, applying schema: Schema? = nil, labels: [String: String] = [:])
        async throws -> any StorageBackend
    {
        let factory = try factory(for: location.scheme)
        if !labels.isEmpty {
            guard let labelling = factory as? any StorageLabelling else {
                throw ModelError(
                    .invalidArgument, "the '\(location.scheme)' backend cannot keep labels in its stores",
                    context: ["scheme": location.scheme])
            }
            return try await labelling.create(location, applying: schema, labels: labels)
        }
        guard let schema else { return try await factory.open(location) }
        return try await factory.open(location, applying: schema)
    }

    /// Opens the store at `location` only if it exists (``StorageBackendFactory/openExisting(_:)``).
    public func openExisting(_ location: StoreLocation) async throws -> any StorageBackend {
        try await factory(for: location.scheme).openExisting(location)
    }

    /// Whether stores of `scheme` keep labels of their own (``StorageLabelling``).
    public func keepsLabels(_ scheme: String) -> Bool {
        factories[scheme.lowercased()] is any StorageLabelling
    }

    /// Removes the store at `url`.
    public func destroy(url: String) async throws {
        try await destroy(try location(parsing: url))
    }

    /// Removes the store at `location`.
    public func destroy(_ location: StoreLocation) async throws {
        try await factory(for: location.scheme).destroy(location)
    }
}
