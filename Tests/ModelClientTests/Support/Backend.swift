import Foundation
import ModelClient
import ModelClientTesting
import ModelTesting
import Testing

/// Where a test's container keeps its store. Tests take backends as an argument, so the same
/// test body runs against the daemon, an embedded SQLite file and (``everyKind``) memory.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// A store of its own on the test daemon, over its Unix socket.
    case daemon
    /// A SQLite file of its own, opened in-process.
    case embedded
    /// A store in this process's memory (`ModelConfiguration(isStoredInMemoryOnly: true)`).
    case memory

    /// Every kind of container (`allCases`).
    static let everyKind: [Backend] = allCases
    /// The stores a second container can open as well, for tests that open one store twice.
    static let shared: [Backend] = [.daemon, .embedded]

    var testDescription: String { rawValue }

    /// Runs `body` with a container for `types` on a new, empty store of this backend
    /// (ModelClientTesting's ``withTestContainer(for:kind:_:)``).
    func withContainer(for types: [any PersistentModel.Type], _ body: (ModelContainer) async throws -> Void)
        async throws
    {
        let kind: TestContainerKind =
            switch self {
            case .daemon: .daemon
            case .embedded: .embedded
            case .memory: .memory
            }
        try await withTestContainer(for: types, kind: kind, body)
    }
}

/// Midnight UTC of a day, `"2026-04-01"`.
func day(_ text: String) -> Date {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withFullDate]
    return formatter.date(from: text)!
}

/// The error `body` throws, as a `ModelError`, recording an issue if it throws none or another.
func modelError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> ModelError?
{
    do {
        try await body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch let error as ModelError {
        return error
    } catch {
        Issue.record("expected a ModelError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
