import ModelCore

/// Opens and destroys stores of one URL scheme.
public protocol StorageBackendFactory: Sendable {
    /// The URL scheme this factory serves (`sqlite`, `memory`).
    var scheme: String { get }
    /// Opens the store at `location`, creating it if it does not exist.
    func open(_ location: StoreLocation) async throws -> any StorageBackend
    /// Opens the store at `location` and applies `schema` (see `StorageBackend.apply(schema:)`).
    /// By default ``open(_:)`` then `apply(schema:)`; a factory that can do both in one write
    /// (one sync for a new store) does.
    func open(_ location: StoreLocation, applying schema: Schema) async throws -> any StorageBackend
    /// Removes the store's data (the file and its journals); the store must be closed.
    func destroy(_ location: StoreLocation) async throws
}

extension StorageBackendFactory {
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
/// need (ModelEngine offers one with SQLite and memory).
public struct StorageRegistry: Sendable {
    private var factories: [String: any StorageBackendFactory]

    public init(_ factories: [any StorageBackendFactory] = []) {
        self.factories = Dictionary(factories.map { ($0.scheme, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Adds (or replaces) the factory for its scheme.
    public mutating func register(_ factory: any StorageBackendFactory) {
        factories[factory.scheme] = factory
    }

    /// The schemes this registry can open.
    public var schemes: [String] { factories.keys.sorted() }

    /// Opens the store at `url`, applying `schema` when given (see
    /// `StorageBackend.apply(schema:)`); a store that cannot take the schema is closed again.
    public func open(url: String, applying schema: Schema? = nil) async throws -> any StorageBackend {
        let location = try StoreLocation(url: url)
        let factory = try factory(for: location)
        guard let schema else { return try await factory.open(location) }
        return try await factory.open(location, applying: schema)
    }

    /// Removes the store at `url`.
    public func destroy(url: String) async throws {
        let location = try StoreLocation(url: url)
        try await factory(for: location).destroy(location)
    }

    private func factory(for location: StoreLocation) throws(ModelError) -> any StorageBackendFactory {
        guard let factory = factories[location.scheme] else {
            throw ModelError(.invalidArgument, "no storage backend for scheme '\(location.scheme)'; available: \(schemes.joined(separator: ", "))")
        }
        return factory
    }
}
