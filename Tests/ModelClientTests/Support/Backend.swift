import Foundation
import ModelClient
import ModelClientTesting
import ModelTesting
import Testing

/// Where a test's container keeps its store: ModelClientTesting's kinds (the daemon, an embedded
/// SQLite file, memory). Tests take them as an argument, so the same body runs on each.
typealias Backend = TestContainerKind

extension TestContainerKind {
    /// Every kind of container (`allCases`).
    static let everyKind: [Backend] = allCases
    /// The stores a second container can open as well, for tests that open one store twice.
    static let shared: [Backend] = [.daemon, .embedded]

    /// Runs `body` with a container for `types` on a new, empty store of this kind.
    func withContainer(for types: [any PersistentModel.Type], _ body: (ModelContainer) async throws -> Void)
        async throws
    {
        try await withTestContainer(for: types, kind: self, body)
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
