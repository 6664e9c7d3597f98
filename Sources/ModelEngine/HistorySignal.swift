import Foundation
import Synchronization

/// Wakes history followers and watches when a store's history grows. Saves made through this
/// process call ``notify()``; followers also poll, to see saves made by other processes on the
/// same file.
public final class HistorySignal: Sendable {
    private struct State {
        public var generation: UInt64 = 0
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// A number that grows with every ``notify()``.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Wakes every waiter.
    public func notify() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the generation differs from `generation`, or when the task is cancelled.
    public func waitForChange(after generation: UInt64) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = waiter
                    return false
                }
                if resumeNow { waiter.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Returns once the generation differs from `generation`, `interval` has passed (a poll, for
    /// saves made by other processes), or the task is cancelled.
    public func waitForChange(after generation: UInt64, orFor interval: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForChange(after: generation) }
            group.addTask { try? await Task.sleep(for: interval) }
            await group.next()
            group.cancelAll()
        }
    }
}
