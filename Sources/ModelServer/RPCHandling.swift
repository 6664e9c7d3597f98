import FramedTransport
import Foundation
import GRPCCore
import Logging
import ModelCore
import NIOCore
import ModelWire
import Synchronization

/// What every handler does around its work: errors become gRPC statuses (through the one
/// mapping in `ModelError+RPC`), and long calls stop when the RPC is cancelled. A class: every
/// call's answer captures it, and as a struct each capture retained its dozen references
/// (callgrind: about 1% of a save's instructions).
final class RPCHandling: Sendable {
    let logger: Logger
    /// Counts every call by method and status, and times it.
    let metrics: DaemonMetrics
    /// Set when the daemon begins to stop: calls cancelled from then on end with UNAVAILABLE.
    let stopping = StopFlag()
    /// Called with the schema version a save was made for when the store refused it as migrated
    /// by another process since (``staleSchemaVersion(of:)``): the daemon reads the stores'
    /// schemas again.
    let staleSchema: (@Sendable (_ servedVersion: String) async -> Void)?
    /// The methods whose saves history stamps with the caller's user.
    static let savingMethods: Set<String> = ["Apply", "Save", "BatchDelete", "BatchUpdate", "StepMigration"]
    /// The metrics of the methods answered on the event loop that read them, looked up once.
    let answeredAtOnce: AnsweredAtOnce

    struct AnsweredAtOnce: Sendable {
        let apply, fetch, count, getObjects: DaemonMetrics.MethodMetrics
    }

    init(
        logger: Logger, metrics: DaemonMetrics,
        staleSchema: (@Sendable (_ servedVersion: String) async -> Void)? = nil
    ) {
        self.logger = logger
        self.metrics = metrics
        self.staleSchema = staleSchema
        answeredAtOnce = AnsweredAtOnce(
            apply: metrics.metrics(of: "Apply"), fetch: metrics.metrics(of: "Fetch"),
            count: metrics.metrics(of: "Count"), getObjects: metrics.metrics(of: "GetObjects"))
    }

    /// Runs a handler's body; any error it throws leaves as an `RPCError` with modeld's status
    /// code and a message a person can act on.
    func handle<T>(_ method: String, _ body: () async throws -> T) async throws -> T {
        let start = ContinuousClock.now
        let counted = metrics.metrics(of: method)
        do {
            // What a call that saves writes is stamped with its caller's user.
            let result =
                counted.saves
                ? try await ChangeSet.$savingUser.withValue(Caller.current.historyName) {
                    try await mapped(method, body)
                }
                : try await mapped(method, body)
            metrics.called(counted, code: nil, since: start)
            return result
        } catch let error as RPCError {
            metrics.called(counted, code: error.code, since: start)
            throw error
        }
    }

    /// Runs `body`, turning what it throws into an `RPCError`.
    private func mapped<T>(_ method: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            // Served with the new schema before the client hears, so that its next call is.
            if let version = Self.staleSchemaVersion(of: error) { await staleSchema?(version) }
            throw rpcError(error, method: method)
        }
    }

    /// The schema version a save was made for, when the store refused it because another process
    /// migrated the store since this one read its schema (the backends' `schemaMismatch` marked
    /// `staleSchema`); nil for any other error.
    static func staleSchemaVersion(of error: any Error) -> String? {
        guard let error = error as? ModelError, error.code == .schemaMismatch, error.context["staleSchema"] == "true"
        else { return nil }
        return error.context["requestedVersion"]
    }

    /// ``handle(_:_:)`` for a body that answers at once on the calling thread, as `caller`
    /// (``PeerCredentials/current`` while it runs), or returns nil (nothing done, nothing
    /// counted) to leave the call to its usual handler.
    func handleAtOnce<T>(
        _ method: DaemonMetrics.MethodMetrics, caller: PeerCredentials?, _ body: () throws -> T?
    ) throws -> T? {
        let start = ContinuousClock.now
        do {
            guard let result = try PeerCredentials.$current.withValue(caller ?? .unknown, operation: body) else {
                return nil
            }
            metrics.called(method, code: nil, since: start)
            return result
        } catch {
            throw failure(error, method: method, since: start)
        }
    }

    /// ``handle(_:_:)`` for a body that takes its call to answer later (``DeferredAnswer``), run
    /// as `caller` (and, for a method that saves, with its user for history): `body` gets the
    /// call's answer, whose response or error leaves as ``handle(_:_:)``'s would, and the call
    /// is counted once answered. What `body` throws answers the call at once. False (nothing
    /// done, nothing counted) leaves the call to its usual handler.
    func handleDeferred(
        _ method: DaemonMetrics.MethodMetrics, caller: PeerCredentials?, answer: DeferredAnswer,
        _ body: (_ respond: @escaping @Sendable (_ make: @escaping @Sendable () throws -> [UInt8]) -> Void) throws ->
            Bool
    ) throws -> Bool {
        let start = ContinuousClock.now
        let respond: @Sendable (@escaping @Sendable () throws -> [UInt8]) -> Void = { make in
            answer.answer {
                do {
                    let response = try make()
                    self.metrics.called(method, code: nil, since: start)
                    return response
                } catch {
                    throw self.failure(error, method: method, since: start)
                }
            }
        }
        do {
            return try PeerCredentials.$current.withValue(caller ?? .unknown) {
                guard method.saves else { return try body(respond) }
                return try ChangeSet.$savingUser.withValue(Caller.current.historyName) { try body(respond) }
            }
        } catch {
            throw failure(error, method: method, since: start)
        }
    }

    /// `error`, thrown by `method`'s call begun at `start`, as it leaves (``rpcError(_:method:)``),
    /// the call counted with its code.
    private func failure(
        _ error: any Error, method: DaemonMetrics.MethodMetrics, since start: ContinuousClock.Instant
    ) -> RPCError {
        if let version = Self.staleSchemaVersion(of: error), let staleSchema {
            // Answered on the calling thread: the schema is read again on a task of its own.
            Task { await staleSchema(version) }
        }
        let mapped = rpcError(error, method: method.method)
        metrics.called(method, code: mapped.code, since: start)
        return mapped
    }

    /// What `error`, thrown by `method`'s handler, leaves as.
    private func rpcError(_ error: any Error, method: String) -> RPCError {
        switch error {
        case var error as ModelError:
            if error.code == .storageFailure { logger.error("\(method): \(error)") }
            if Self.staleSchemaVersion(of: error) != nil, let stored = error.context["storeVersion"] {
                // The backend speaks to the process that opened the store; the daemon has
                // served the new schema since (`staleSchema`), so the caller need only ask again.
                error.message =
                    "the store was migrated to schema version \(stored.prefix(12)) while this call was under way (it was made for version \((error.context["requestedVersion"] ?? "").prefix(12))); nothing was saved: send it again for the new schema (a session opened before the migration is closed: open another)"
            }
            return RPCError(error)
        case let error as RPCError:
            return error
        case is CancellationError:
            if stopping.isSet {
                return RPCError(
                    ModelError(.unavailable, "modeld is stopping: the call was ended; call again once it is back"))
            }
            return RPCError(
                code: .cancelled,
                message: "the call was cancelled (the client went away, its deadline passed, or the daemon is stopping)"
            )
        case let error as ChannelError where error == .ioOnClosedChannel || error == .alreadyClosed:
            // A stream written to after its client left: nothing is wrong with the daemon.
            logger.debug("\(method): the client left before its answer was written (\(error))")
            return RPCError(code: .cancelled, message: "the client left before the answer was written")
        default:
            logger.error("\(method): unexpected error: \(error)")
            return RPCError(code: .internalError, message: "modeld failed unexpectedly: \(error); see the daemon's log")
        }
    }

    /// Runs `body` so that it is cancelled when the RPC is: gRPC signals cancellation (the
    /// client gone, its deadline passed, the daemon stopping) through the cancellation handle the
    /// transport binds to the handler's task, not by cancelling that task, so a long call would
    /// otherwise run on after its client left. Cancelled, the store interrupts the statement under
    /// way. The body runs in the handler's own task (no child tasks to schedule, no thread to
    /// wake per call).
    func cancellable<T>(_ body: () async throws -> T) async throws -> T {
        try await HandlerTaskCanceller.run(body)
    }

    /// ``handle(_:_:)`` and ``cancellable(_:)`` together: the usual shape of a handler whose
    /// work may take long.
    func handleCancellable<T>(_ method: String, _ body: () async throws -> T) async throws -> T {
        try await handle(method) { try await cancellable(body) }
    }
}

/// Whether the daemon has begun to stop.
final class StopFlag: Sendable {
    private let flag = Atomic(false)

    var isSet: Bool { flag.load(ordering: .relaxed) }

    func set() { flag.store(true, ordering: .relaxed) }
}

/// Cancels the task running an RPC's handler when gRPC cancels the RPC. gRPC calls its
/// cancellation handlers from whichever thread cancels the RPC; the lock keeps the task from
/// finishing while it is being cancelled, and no cancel reaches it once it has finished.
final class HandlerTaskCanceller: Sendable {
    private struct Running: @unchecked Sendable { // The task is touched only under the lock, while it runs.
        var task: UnsafeCurrentTask?
    }
    private let running = Mutex(Running())

    /// Runs `body` in the current task, which is cancelled if the RPC is cancelled meanwhile (or
    /// already was).
    static func run<T>(_ body: () async throws -> T) async throws -> T {
        // A call modeld's transports run themselves: its record cancels its task.
        if let record = ServerStreamRecord.current { return try await record.cancellingTask(body) }
        let canceller = HandlerTaskCanceller()
        withUnsafeCurrentTask { current in canceller.running.withLock { $0.task = current } }
        defer { canceller.running.withLock { $0.task = nil } }
        return try await withRPCCancellationHandler(operation: body, onCancelRPC: { canceller.cancel() })
    }

    private func cancel() {
        running.withLock { $0.task?.cancel() }
    }
}
