import Synchronization

/// Lets one async operation at a time through, in arrival order: for changes to the store
/// catalog, which await the disk while other calls keep reading the catalog.
final class AsyncMutex: Sendable {
    private struct State {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func withLock<T>(_ body: () async throws -> T) async throws -> T {
        await lock()
        defer { unlock() }
        return try await body()
    }

    private func lock() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let enter = state.withLock { state -> Bool in
                if state.busy {
                    state.waiters.append(waiter)
                    return false
                }
                state.busy = true
                return true
            }
            if enter { waiter.resume() }
        }
    }

    private func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
