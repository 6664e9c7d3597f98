import Foundation
import ModelCore
import ModelStorage

/// Opens and destroys PostgreSQL stores: `postgres://user@host:port/database?schema=name` or
/// the Unix-socket form `postgres:///database?host=/run/postgresql&schema=name` (see
/// ``PostgresEndpoint``); `postgresql://` alike. A store is a PostgreSQL schema (namespace) of
/// its own, so opening a URL where a store is already makes this process one more opener of it
/// — how a second daemon joins. Destroying drops the namespace with everything in it.
public struct PostgresStorageFactory: StorageBackendFactory {
    /// `postgres` or `postgresql`.
    public let scheme: String

    public init(scheme: String = "postgres") {
        self.scheme = scheme
    }

    /// Checks the URL (server, database, namespace) and keeps it as given.
    public func location(parsing url: String) throws(ModelError) -> StoreLocation {
        let generic = try StoreLocation(url: url)
        guard generic.scheme == scheme else {
            throw ModelError(.invalidArgument, "'\(PostgresEndpoint.redacted(url))' is not a \(scheme): URL")
        }
        _ = try PostgresEndpoint(url: url)
        return generic
    }

    public func open(_ location: StoreLocation) async throws -> any StorageBackend {
        try await PostgresStore.open(url: location.url)
    }

    public func openExisting(_ location: StoreLocation) async throws -> any StorageBackend {
        try await PostgresStore.open(url: location.url, creating: false)
    }

    public func open(_ location: StoreLocation, applying schema: Schema) async throws -> any StorageBackend {
        try await PostgresStore.open(url: location.url, applying: schema)
    }

    /// Drops the store's namespace, taking the store's lock first (a daemon opening it waits).
    public func destroy(_ location: StoreLocation) async throws {
        let endpoint = try PostgresEndpoint(location: location)
        let connection = PostgresConnectionQueue(endpoint: endpoint, label: "destroy")
        let metadata = PostgresMetadata(namespace: endpoint.namespace)
        do {
            try await connection.run { session in
                try session.transaction {
                    try metadata.lock(session)
                    try session.query("DROP SCHEMA IF EXISTS \(SQL.quote(endpoint.namespace)) CASCADE")
                }
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }
}
