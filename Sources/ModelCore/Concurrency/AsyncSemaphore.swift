import Synchronization

/// Lets up to `permits` async operations through at once, the others waiting in arrival order.
/// A waiter whose task is cancelled stops waiting and throws `CancellationError`, taking no
/// permit. With one permit it is an async mutex: an operation that awaits inside (the disk, a
/// store) keeps others out until it is done, where an actor would let them in at every `await`.
public final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var nextWaiter = 0
        /// In arrival order (keys grow).
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
    }

    private let state: Mutex<State>

    public init(permits: Int) {
        precondition(permits > 0, "a semaphore needs at least one permit")
        state = Mutex(State(available: permits))
    }

    /// Takes a permit if one is free, without waiting.
    public func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.available > 0, state.waiters.isEmpty else { return false }
            state.available -= 1
            return true
        }
    }

    /// Takes a permit, waiting for one if none is free; throws `CancellationError` (holding none)
    /// if the task is cancelled while it waits.
    public func acquire() async throws {
        if tryAcquire() { return }
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let now = state.withLock { state -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.available > 0, state.waiters.isEmpty {
                        state.available -= 1
                        return .success(())
                    }
                    state.waiters[id] = waiter
                    return nil
                }
                if let now { waiter.resume(with: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    /// Gives a permit back: to the longest waiter, if any.
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard let first = state.waiters.keys.min() else {
                state.available += 1
                return nil
            }
            return state.waiters.removeValue(forKey: first)
        }
        next?.resume()
    }

    /// Runs `body` holding a permit.
    public func withPermit<T>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }

    /// How many operations wait for a permit.
    public var waiting: Int { state.withLock { $0.waiters.count } }
}
