import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import ModelStorage

/// The backends every engine test runs against: in memory, and an SQLite file in a fresh
/// temporary directory of its own.
enum BackendKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case sqlite

    var description: String { rawValue }
}

/// A store opened for one test, removed when the test is done.
struct TestStore: Sendable {
    let container: ModelContainer
    let directory: URL?

    /// Opens a fresh store of `kind` with `schema`.
    static func make(_ kind: BackendKind, schema: Schema) async throws -> TestStore {
        switch kind {
        case .memory:
            return TestStore(
                container: try await ModelContainer.open(url: "memory:test", schema: schema, registry: .standard),
                directory: nil)
        case .sqlite:
            let directory = try makeTemporaryDirectory()
            let url = "sqlite://\(directory.path)/store.sqlite"
            return TestStore(
                container: try await ModelContainer.open(url: url, schema: schema, registry: .standard),
                directory: directory)
        }
    }

    /// The store's URL, for opening a second container on the same file.
    var url: String? { directory.map { "sqlite://\($0.path)/store.sqlite" } }

    func context(
        author: String? = nil, mergePolicy: MergePolicy = .error,
        uniquenessPolicy: UniquenessPolicy = .error
    ) -> ModelContext {
        container.makeContext(author: author, mergePolicy: mergePolicy, uniquenessPolicy: uniquenessPolicy)
    }

    /// Closes the store and removes its directory.
    func close() async {
        await container.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }
}

/// Runs `body` with a fresh store, closing and removing it afterwards, even when `body` throws.
func withStore(_ kind: BackendKind, schema: Schema, _ body: (TestStore) async throws -> Void) async throws {
    let store = try await TestStore.make(kind, schema: schema)
    do {
        try await body(store)
    } catch {
        await store.close()
        throw error
    }
    await store.close()
}

extension Date {
    /// A date from ISO 8601 text; traps on bad text, which only a broken test would pass.
    static func iso(_ text: String) -> Date {
        guard let timestamp = Timestamp(iso8601: text) else { preconditionFailure("bad date in test: \(text)") }
        return timestamp.date
    }
}
