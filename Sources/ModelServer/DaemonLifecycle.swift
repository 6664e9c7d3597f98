/// The phases of a daemon's life, as a state machine whose transitions refuse illegal moves (as
/// grpc-swift's `GRPCServer` keeps its state): created → starting → ready → stopping → stopped,
/// or failed. A stop asked for at any moment is never lost: before the servers exist it is
/// remembered and carried out as soon as they do, and a daemon asked to stop never reports ready
/// or serving afterwards. ``ModelDaemon`` keeps one in a `Mutex` and acts on the actions its
/// transitions return, outside the lock.
struct DaemonLifecycle {
    typealias Waiter = CheckedContinuation<Void, any Error>
    typealias Stop = @Sendable () -> Void

    enum State {
        /// `stopRequested`: ``shutdown()`` came before ``run()``.
        case created(waiters: [Waiter], stopRequested: Bool)
        /// Opening stores and binding sockets; `stop` once the servers exist.
        case starting(waiters: [Waiter], stop: Stop?, stopRequested: Bool)
        case ready(stop: Stop)
        case stopping
        case stopped
        case failed(DaemonStartError)
    }

    /// A move the state does not allow.
    struct IllegalTransition: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var state = State.created(waiters: [], stopRequested: false)

    /// Whether the daemon serves.
    var isServing: Bool {
        if case .ready = state { return true }
        return false
    }

    /// ``ModelDaemon/run()`` began.
    mutating func starting() throws(IllegalTransition) {
        guard case .created(let waiters, let stopRequested) = state else {
            throw IllegalTransition(description: "the daemon was already run; make a new one to run it again")
        }
        state = .starting(waiters: waiters, stop: nil, stopRequested: stopRequested)
    }

    /// The servers exist and can be stopped with `stop`. Returns `stop` when a stop was asked for
    /// already (the caller runs it).
    mutating func serversCreated(stop: @escaping Stop) throws(IllegalTransition) -> Stop? {
        guard case .starting(let waiters, nil, let stopRequested) = state else {
            throw IllegalTransition(description: "servers created outside start-up (\(state))")
        }
        if stopRequested {
            state = .stopping
            return stop
        }
        state = .starting(waiters: waiters, stop: stop, stopRequested: false)
        return nil
    }

    /// The sockets listen. Returns the waiters to resume, or nil when the daemon is stopping
    /// (it does not become ready).
    mutating func listening() throws(IllegalTransition) -> [Waiter]? {
        switch state {
        case .starting(let waiters, let stop?, false):
            state = .ready(stop: stop)
            return waiters
        case .stopping:
            return nil
        default:
            throw IllegalTransition(description: "the daemon cannot become ready from \(state)")
        }
    }

    /// A stop is asked for. Returns the function that stops the servers, when they exist and
    /// this is the first stop (the caller runs it outside the lock).
    mutating func stopRequested() -> Stop? {
        switch state {
        case .created(let waiters, _):
            state = .created(waiters: waiters, stopRequested: true)
            return nil
        case .starting(let waiters, let stop, _):
            guard let stop else {
                state = .starting(waiters: waiters, stop: nil, stopRequested: true)
                return nil
            }
            state = .stopping
            return stop
        case .ready(let stop):
            state = .stopping
            return stop
        case .stopping, .stopped, .failed:
            return nil
        }
    }

    /// The caller waits for the daemon to be ready: nil (and `waiter` kept) while it starts,
    /// else how it ends at once.
    mutating func waitForReady(_ waiter: Waiter) -> Result<Void, DaemonStartError>? {
        switch state {
        case .created(var waiters, let stopRequested):
            waiters.append(waiter)
            state = .created(waiters: waiters, stopRequested: stopRequested)
            return nil
        case .starting(var waiters, let stop, let stopRequested):
            waiters.append(waiter)
            state = .starting(waiters: waiters, stop: stop, stopRequested: stopRequested)
            return nil
        case .ready:
            return .success(())
        case .stopping, .stopped:
            return .failure(DaemonStartError("the daemon has stopped"))
        case .failed(let error):
            return .failure(error)
        }
    }

    /// ``ModelDaemon/run()`` returned (with `failure`, if it threw). Returns the waiters still
    /// waiting for start-up, which hear why it never came.
    mutating func ended(failure: DaemonStartError?) -> [Waiter] {
        let waiting: [Waiter] =
            switch state {
            case .created(let waiters, _), .starting(let waiters, _, _): waiters
            default: []
            }
        state = failure.map(State.failed) ?? .stopped
        return waiting
    }
}
