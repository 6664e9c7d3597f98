import Foundation
import ModelCore
import Synchronization

// Helpers every test target shares: temporary directories, values tasks share, events to wait
// for, errors caught. One copy here rather than one per target.

/// A new directory with a short random path under /tmp (socket paths and file names stay short:
/// a Unix socket's path is at most 107 bytes).
public func makeTemporaryDirectory(prefix: String = "md") throws -> URL {
    let url = URL(fileURLWithPath: "/tmp/\(prefix)-\(UUID().uuidString.prefix(8).lowercased())")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Runs `body` with a fresh temporary directory, removed when `body` ends, even by throwing.
public func withTemporaryDirectory<T>(prefix: String = "md", _ body: (URL) async throws -> T) async throws -> T {
    let url = try makeTemporaryDirectory(prefix: prefix)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// The `ModelError` an operation throws, or nil if it succeeds or throws something else.
public func modelError(_ body: () async throws -> Void) async -> ModelError? {
    do {
        try await body()
        return nil
    } catch let error as ModelError {
        return error
    } catch {
        return nil
    }
}

/// A date value from ISO 8601 text; a bad text is a broken test.
public func date(_ text: String) -> Value {
    guard let timestamp = Timestamp(iso8601: text) else { preconditionFailure("bad date in test: \(text)") }
    return .date(timestamp)
}

/// A value tasks share in a test: collected results, counters.
public final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: Value) { mutex = Mutex(value) }
    public var value: Value { mutex.withLock { $0 } }
    public func update<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// Something that happens once in a test (a stream has begun, a follower has seen a save), for
/// another task to wait on instead of sleeping for a time it hopes is long enough.
public final class TestEvent: Sendable {
    private struct State {
        var happened = false
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var timedOut: Set<UUID> = []
    }

    private let state = Mutex(State())

    public init() {}

    public var hasHappened: Bool { state.withLock { $0.happened } }

    /// Marks the event as happened and wakes every waiter; later calls do nothing.
    public func signal() {
        let waiters = state.withLock { state in
            state.happened = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the event has happened, or after `timeout`; true if it happened.
    @discardableResult
    public func wait(timeout: Duration = .seconds(60)) async -> Bool {
        let id = UUID()
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let resumeNow = self.state.withLock { state in
                        let over = state.happened || state.timedOut.contains(id)
                        if !over { state.waiters[id] = continuation }
                        return over
                    }
                    if resumeNow { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                // Time is up: releases this wait alone (a no-op when the event woke it).
                self.state.withLock { state in
                    state.timedOut.insert(id)
                    return state.waiters.removeValue(forKey: id)
                }?.resume()
            }
            await group.next()
            group.cancelAll()
            return hasHappened
        }
    }
}
