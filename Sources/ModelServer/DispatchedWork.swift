import Dispatch
import Synchronization

/// Blocking work (a synced write of a file, say) started at once on a Dispatch thread, off the
/// few threads that tasks run on, and awaited later by one caller. Unlike a `Task` that waits
/// for the Dispatch thread, starting it wakes no thread of the task pool, and awaiting work
/// that has finished does not suspend.
final class DispatchedWork<Success: Sendable>: Sendable {
    /// Running (with the caller waiting for it, once it waits), or finished with its result.
    private enum State {
        case running(waiter: CheckedContinuation<Success, any Error>?)
        case finished(Result<Success, any Error>)
    }

    private let state = Mutex(State.running(waiter: nil))

    /// Starts `body` on a Dispatch thread.
    init(_ body: @escaping @Sendable () throws -> Success) {
        DispatchQueue.global().async { [self] in
            let result = Result(catching: body)
            let waiter = state.withLock { state -> CheckedContinuation<Success, any Error>? in
                guard case .running(let waiter) = state else { preconditionFailure("DispatchedWork finished twice") }
                state = .finished(result)
                return waiter
            }
            waiter?.resume(with: result)
        }
    }

    /// For tests: whether a caller waits for the work to finish.
    var hasWaiter: Bool {
        state.withLock { if case .running(waiter: .some) = $0 { true } else { false } }
    }

    /// The work's result, once it has finished. One caller may wait at a time.
    func value() async throws -> Success {
        if case .finished(let result) = state.withLock({ $0 }) { return try result.get() }
        return try await withCheckedThrowingContinuation { continuation in
            let finished = state.withLock { state -> Result<Success, any Error>? in
                switch state {
                case .finished(let result):
                    return result
                case .running(waiter: nil):
                    state = .running(waiter: continuation)
                    return nil
                case .running(waiter: .some):
                    preconditionFailure("DispatchedWork awaited by two callers at once")
                }
            }
            if let finished { continuation.resume(with: finished) }
        }
    }
}
