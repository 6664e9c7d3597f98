import Foundation
import ModelCore
import ModelStorage

/// Opens and destroys SQLite stores: `sqlite:///absolute/path.sqlite`.
public struct SQLiteStorageFactory: StorageBackendFactory {
    /// `sqlite`.
    public let scheme = "sqlite"

    /// A factory; it holds no state.
    public init() {}

    /// Opens the store file at `location`, creating it (and its directory) when missing.
    public func open(_ location: StoreLocation) async throws -> any StorageBackend {
        try await SQLiteStore.open(path: try path(of: location))
    }

    /// Opens the store file at `location` and applies `schema` in the transaction that prepares
    /// the file.
    public func open(_ location: StoreLocation, applying schema: Schema) async throws -> any StorageBackend {
        try await SQLiteStore.open(path: try path(of: location), applying: schema)
    }

    /// Removes the store file and its `-wal` and `-shm` files; a missing file is not an error.
    public func destroy(_ location: StoreLocation) async throws {
        let path = try path(of: location)
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] where FileManager.default.fileExists(atPath: file) {
            do {
                try FileManager.default.removeItem(atPath: file)
            } catch {
                throw ModelError(.storageFailure, "cannot remove \(file): \(error.localizedDescription)", context: ["path": file])
            }
        }
    }

    private func path(of location: StoreLocation) throws(ModelError) -> String {
        guard location.scheme == scheme else {
            throw ModelError(.invalidArgument, "\(location) is not an SQLite store URL; use sqlite:///absolute/path.sqlite")
        }
        guard location.path.hasPrefix("/") else {
            throw ModelError(.invalidArgument, "\(location) needs an absolute path: sqlite:///absolute/path.sqlite")
        }
        return location.path
    }
}
