import Foundation
import MemoryStorage
import ModelCore
import ModelFixtures
import ModelStorage
import PostgresStorage
import SQLiteStorage

/// The backends the conformance suite runs against. Every test takes a `BackendKind` argument
/// (`@Test(arguments: BackendKind.allCases)`), so a new case here runs the whole suite on it.
enum BackendKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    var description: String { rawValue }

    /// Opens a fresh, empty store of this kind, for one test only. A file backend gets its own
    /// short temporary directory (``makeTemporaryDirectory()``), which ``TestStore/close()`` removes;
    /// a PostgreSQL store a namespace of its own on the suite's server (``PostgresServer``).
    func open() async throws -> (backend: any StorageBackend, directory: URL?) {
        switch self {
        case .memory:
            return (try await MemoryStorageFactory().open(StoreLocation(url: "memory:conformance")), nil)
        case .sqlite:
            let directory = try makeTemporaryDirectory()
            let location = StoreLocation(scheme: "sqlite", path: directory.appendingPathComponent("store.sqlite").path)
            do {
                return (try await SQLiteStorageFactory().open(location), directory)
            } catch {
                try? FileManager.default.removeItem(at: directory)
                throw error
            }
        case .postgres:
            return (try await PostgresStore.open(url: try PostgresServer.freshStoreURL()), nil)
        }
    }
}
