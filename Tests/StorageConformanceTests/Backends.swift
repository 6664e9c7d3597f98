import Foundation
import MemoryStorage
import ModelCore
import ModelFixtures
import ModelStorage
import SQLiteStorage

/// The backends the conformance suite runs against. Every test takes a `BackendKind` argument
/// (`@Test(arguments: BackendKind.allCases)`), so a new case here runs the whole suite on it.
enum BackendKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case sqlite

    var description: String { rawValue }

    /// Opens a fresh, empty store of this kind, for one test only. A file backend gets its own
    /// short temporary directory (``makeTemporaryDirectory()``), which ``TestStore/close()`` removes.
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
        }
    }
}
