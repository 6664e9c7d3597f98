import Foundation
import ModelClient
import ModelTesting
import Testing

/// Where a test's ``ModelContainer`` keeps its store. Every kind gives each test a store of its
/// own, so tests running in parallel never share one.
public enum TestContainerKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// A store of its own on the test daemon (``TestDaemon/shared``), over its Unix socket;
    /// dropped after the test.
    case daemon
    /// An SQLite file of its own in a temporary directory, opened in-process; deleted after the test.
    case embedded
    /// A store in this process's memory (`ModelConfiguration(isStoredInMemoryOnly: true)`).
    case memory

    public var testDescription: String { rawValue }
}

/// The container of the running test, under the `.modelContainer(for:kind:)` trait.
public enum TestContainer {
    @TaskLocal public static var current: ModelContainer?
}

/// Runs `body` with a container for `types` on a new, empty store of `kind`, closed (and its
/// store dropped or deleted) afterwards, whether `body` succeeds or throws.
public func withTestContainer<T: Sendable>(
    for types: [any PersistentModel.Type], kind: TestContainerKind = .daemon,
    _ body: (ModelContainer) async throws -> T
) async throws -> T {
    switch kind {
    case .daemon:
        return try await withTestStore { store in
            try await withContainer(for: types, configuration: ModelConfiguration(url: store.url), body)
        }
    case .embedded:
        let directory = try TemporaryDirectory.make(prefix: "modelclient")
        defer { try? FileManager.default.removeItem(at: directory) }
        var components = URLComponents()
        components.scheme = "sqlite"
        components.path = directory.appendingPathComponent("store.sqlite").path
        guard let url = components.url else {
            throw ModelError(.invalidArgument, "no sqlite URL for the temporary directory \(directory.path)")
        }
        return try await withContainer(for: types, configuration: ModelConfiguration(url: url), body)
    case .memory:
        return try await withContainer(for: types, configuration: ModelConfiguration(isStoredInMemoryOnly: true), body)
    }
}

/// Opens a container, runs `body` with it, and closes it, whatever `body` does.
private func withContainer<T>(
    for types: [any PersistentModel.Type], configuration: ModelConfiguration, _ body: (ModelContainer) async throws -> T
) async throws -> T {
    let container = try await ModelContainer(for: types, configuration: configuration)
    do {
        let result = try await body(container)
        await container.close()
        return result
    } catch {
        await container.close()
        throw error
    }
}

/// Gives each test a container of its own (see ``withTestContainer(for:kind:_:)``), reachable as
/// `TestContainer.current` in the test. On a suite, every test in it gets its own.
public struct ModelContainerTrait: TestTrait, SuiteTrait, TestScoping {
    // The model types are metatypes of classes: immutable, and safe to use from any task.
    nonisolated(unsafe) let types: [any PersistentModel.Type]
    let kind: TestContainerKind

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope has no test case to give a container to; its tests each get theirs.
        guard testCase != nil || !test.isSuite else { return try await function() }
        try await withTestContainer(for: types, kind: kind) { container in
            try await TestContainer.$current.withValue(container) { try await function() }
        }
    }
}

extension Trait where Self == ModelContainerTrait {
    /// A container for `types` on a store of its own for each test (on the test daemon, an
    /// embedded SQLite file, or memory); `TestContainer.current` in the test.
    public static func modelContainer(for types: any PersistentModel.Type..., kind: TestContainerKind = .daemon)
        -> Self
    {
        ModelContainerTrait(types: types, kind: kind)
    }
}
