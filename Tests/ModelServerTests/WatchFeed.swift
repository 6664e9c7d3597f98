import Foundation
import ModelCore
import ModelRemote
import Synchronization
import Testing

/// A watch over the socket, its updates kept as they arrive: ``next()`` waits for the next one
/// (or the watch's end) — an event, with a minute's guard against a hang.
final class WatchFeed: Sendable {
    private struct State {
        var updates: [WatchUpdate] = []
        var end: (any Error)?
        var ended = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// The state, in a box that tasks can hold (a `Mutex` cannot be captured).
    private final class Box: Sendable {
        let state = Mutex(State())
    }

    private let box = Box()
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ client: DaemonClient, _ query: WatchedQuery, store: String, storeIdentifier: UUID? = nil) {
        let started = Task { [box] in
            do {
                try await client.watch(query, in: store, storeIdentifier: storeIdentifier) { update in
                    Self.deliver(box) { $0.updates.append(update) }
                }
                Self.deliver(box) { $0.ended = true }
            } catch {
                Self.deliver(box) {
                    $0.end = error
                    $0.ended = true
                }
            }
        }
        task.withLock { $0 = started }
    }

    private static func deliver(_ box: Box, _ change: (inout State) -> Void) {
        let waiter = box.state.withLock { state -> CheckedContinuation<Void, Never>? in
            change(&state)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The next update; fails the test when the watch ends first or nothing comes in a minute.
    func next(sourceLocation: SourceLocation = #_sourceLocation) async throws -> WatchUpdate {
        switch try await nextEvent() {
        case .success(let update): return update
        case .failure(let error):
            Issue.record("the watch ended instead of reporting: \(error)", sourceLocation: sourceLocation)
            throw error
        }
    }

    /// How the watch ended (its error), waiting for it; fails the test if an update comes first.
    func end(sourceLocation: SourceLocation = #_sourceLocation) async throws -> (any Error)? {
        switch try await nextEvent() {
        case .success(let update):
            Issue.record("the watch reported \(update) instead of ending", sourceLocation: sourceLocation)
            return nil
        case .failure(let error): return error is EndedCleanly ? nil : error
        }
    }

    private struct EndedCleanly: Error {}
    private struct TimedOut: Error, CustomStringConvertible {
        var description: String { "nothing came from the watch within a minute" }
    }

    private func nextEvent() async throws -> Result<WatchUpdate, any Error> {
        let guardTask = Task { [box] in
            try? await Task.sleep(for: .seconds(60))
            if !Task.isCancelled { Self.deliver(box) { _ in } }
        }
        defer { guardTask.cancel() }
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let taken = box.state.withLock { state -> Result<WatchUpdate, any Error>? in
                if !state.updates.isEmpty { return .success(state.updates.removeFirst()) }
                if state.ended { return .failure(state.end ?? EndedCleanly()) }
                return nil
            }
            if let taken { return taken }
            if ContinuousClock.now >= deadline { throw TimedOut() }
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let ready = box.state.withLock { state -> Bool in
                    if !state.updates.isEmpty || state.ended { return true }
                    state.waiter = waiter
                    return false
                }
                if ready { waiter.resume() }
            }
        }
    }

    /// Updates that arrived and were not taken yet.
    var waiting: Int { box.state.withLock { $0.updates.count } }

    func cancel() {
        task.withLock { $0?.cancel() }
    }

    deinit { task.withLock { $0?.cancel() } }
}
