import Foundation
import ModelRemote
import ModelCore
import Testing

/// A store of its own for one test: a uniquely named store on a daemon, and a client connected
/// to it. The store is dropped when the test ends, also when it fails.
public struct TestStore: Sendable {
    /// The store's name on the daemon.
    public let name: String
    /// A client connected to the daemon.
    public let client: DaemonClient
    /// The daemon's socket, for clients of your own (another process, `modelctl`).
    public let socketPath: String
    /// The store as created (its UUID, its schema's hash).
    public let info: StoreInfo

    /// The store's URL, for ModelClient: `ModelContainer(for: Trip.self, url: store.url)`.
    public var url: URL {
        var components = URLComponents()
        components.scheme = "unix"
        components.path = socketPath
        components.queryItems = [URLQueryItem(name: "store", value: name)]
        return components.url!
    }

    /// The store of the running test, under the `.isolatedStore` trait.
    @TaskLocal public static var current: TestStore?

    /// Opens a session on the store.
    public func openSession(
        author: String? = nil, mergePolicy: MergePolicy = .error,
        uniquenessPolicy: UniquenessPolicy = .error
    ) async throws -> RemoteSession {
        try await client.openSession(
            on: name, author: author, mergePolicy: mergePolicy, uniquenessPolicy: uniquenessPolicy)
    }
}

/// Where a test's store lives.
public enum TestDaemonChoice: Sendable {
    /// On the daemon shared by the whole test process (fast: a store per test, one daemon).
    case shared
    /// On a daemon started for this test alone, and stopped after it.
    case perTest
}

/// Runs `body` with a store of its own: created with `schema` on the chosen daemon, dropped
/// afterwards, whether `body` succeeds or throws.
public func withTestStore<T: Sendable>(
    schema: Schema? = nil, kind: StoreInfo.Kind = .sqlite, daemon: TestDaemonChoice = .shared,
    _ body: (TestStore) async throws -> T
) async throws -> T {
    switch daemon {
    case .shared:
        return try await withStore(on: try await TestDaemon.shared, schema: schema, kind: kind, body)
    case .perTest:
        return try await TestDaemon.withDaemon { try await withStore(on: $0, schema: schema, kind: kind, body) }
    }
}

/// Runs `body` with a store of its own on `daemon`.
public func withStore<T: Sendable>(
    on daemon: TestDaemon, schema: Schema? = nil, kind: StoreInfo.Kind = .sqlite,
    _ body: (TestStore) async throws -> T
) async throws -> T {
    try await daemon.withClient { client in
        let name = "t-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        let info = try await client.createStore(String(name), kind: kind, schema: schema)
        let store = TestStore(name: String(name), client: client, socketPath: daemon.socketPath, info: info)
        do {
            let result = try await body(store)
            try await client.dropStore(store.name, force: true)
            return result
        } catch {
            _ = try? await client.dropStore(store.name, force: true)
            throw error
        }
    }
}

/// Gives each test a store of its own (see ``withTestStore(schema:kind:daemon:_:)``), reachable
/// as `TestStore.current` in the test. On a suite, every test in it gets its own.
public struct IsolatedStoreTrait: TestTrait, SuiteTrait, TestScoping {
    let schema: Schema?
    let kind: StoreInfo.Kind
    let daemon: TestDaemonChoice

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope has no test case to give a store to; its tests each get theirs.
        guard testCase != nil || !test.isSuite else { return try await function() }
        try await withTestStore(schema: schema, kind: kind, daemon: daemon) { store in
            try await TestStore.$current.withValue(store) { try await function() }
        }
    }
}

extension Trait where Self == IsolatedStoreTrait {
    /// A store of its own for each test, with `schema`; `TestStore.current` in the test.
    public static func isolatedStore(
        schema: Schema? = nil, kind: StoreInfo.Kind = .sqlite, daemon: TestDaemonChoice = .shared
    ) -> Self {
        IsolatedStoreTrait(schema: schema, kind: kind, daemon: daemon)
    }
}
