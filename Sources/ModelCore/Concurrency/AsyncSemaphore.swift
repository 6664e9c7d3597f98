import Synchronization

/// Lets up to `permits` async operations through at once, the others waiting in arrival order.
/// A waiter whose task is cancelled stops waiting and throws `CancellationError`, taking no
/// permit (``acquire()``), unless it asked to wait regardless (``acquireUncancellably()``). With
/// one permit it is an async mutex: an operation that awaits inside (the disk, a store) keeps
/// the others out until it is done, where an actor would let them in at every `await`. The one
/// async queue of the code base: the daemon's store catalog, streaming slots, and every
/// context's operations take turns through it.
public final class AsyncSemaphore: Sendable {
    /// Resumes a waiter: with success once it holds a permit, or with its cancellation.
    private typealias Waiter = @Sendable (Result<Void, any Error>) -> Void

    private struct State {
        var available: Int
        var nextWaiter = 0
        /// In arrival order (keys grow).
        var waiters: [Int: Waiter] = [:]
    }

    private let state: Mutex<State>

    public init(permits: Int) {
        precondition(permits > 0, "a semaphore needs at least one permit")
        state = Mutex(State(available: permits))
    }

    /// Takes a permit if one is free and nobody waits, without waiting.
    public func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.available > 0, state.waiters.isEmpty else { return false }
            state.available -= 1
            return true
        }
    }

    /// Takes a permit, waiting for one if none is free; throws `CancellationError` (holding none)
    /// if the task is cancelled while it waits. It runs, and returns, in the caller's isolation.
    public nonisolated(nonsending) func acquire() async throws {
        if tryAcquire() { return }
        let id = nextID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enqueue(id, checkingCancellation: true) { continuation.resume(with: $0) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?(.failure(CancellationError()))
        }
    }

    /// Takes a permit, waiting for one if none is free, whether or not the task is cancelled:
    /// for work that must run once its turn comes (a rollback). In the caller's isolation.
    public nonisolated(nonsending) func acquireUncancellably() async {
        if tryAcquire() { return }
        let id = nextID()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            enqueue(id, checkingCancellation: false) { _ in continuation.resume() }
        }
    }

    /// Gives a permit back: to the longest waiter, if any.
    public func release() {
        let next = state.withLock { state -> Waiter? in
            guard let first = state.waiters.keys.min() else {
                state.available += 1
                return nil
            }
            return state.waiters.removeValue(forKey: first)
        }
        next?(.success(()))
    }

    /// Runs `body` holding a permit, in the caller's isolation when that is an actor's known
    /// where the closure is written (`body` is inferred isolated to it). A closure written in a
    /// `nonisolated(nonsending)` function is not: it runs on the global executor, beside the
    /// caller's actor. There, call ``acquire()`` and ``release()`` instead (as a model
    /// context's operations do).
    public func withPermit<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws
        -> T
    {
        try await acquire()
        defer { release() }
        return try await body()
    }

    /// How many operations wait for a permit.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    private func nextID() -> Int {
        state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
    }

    /// Takes a free permit at once (resuming `waiter`), or queues `waiter`.
    private func enqueue(_ id: Int, checkingCancellation: Bool, _ waiter: @escaping Waiter) {
        let now = state.withLock { state -> Result<Void, any Error>? in
            if checkingCancellation, Task.isCancelled { return .failure(CancellationError()) }
            if state.available > 0, state.waiters.isEmpty {
                state.available -= 1
                return .success(())
            }
            state.waiters[id] = waiter
            return nil
        }
        if let now { waiter(now) }
    }
}
