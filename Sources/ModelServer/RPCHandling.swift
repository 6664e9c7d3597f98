import Foundation
import GRPCCore
import Logging
import ModelCore
import ModelWire

/// What every handler does around its work: errors become gRPC statuses (through the one
/// mapping in `ModelError+RPC`), and long calls stop when the RPC is cancelled.
struct RPCHandling: Sendable {
    let logger: Logger

    /// Runs a handler's body; any error it throws leaves as an `RPCError` with modeld's status
    /// code and a message a person can act on.
    func handle<T>(_ method: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ModelError {
            if error.code == .storageFailure { logger.error("\(method): \(error)") }
            throw RPCError(error)
        } catch let error as RPCError {
            throw error
        } catch is CancellationError {
            throw RPCError(code: .cancelled, message: "the call was cancelled (the client went away, its deadline passed, or the daemon is stopping)")
        } catch {
            logger.error("\(method): unexpected error: \(error)")
            throw RPCError(code: .internalError, message: "modeld failed unexpectedly: \(error); see the daemon's log")
        }
    }

    /// Runs `body` in a child task that is cancelled when the RPC is: gRPC signals cancellation
    /// (the client gone, its deadline passed, the daemon stopping) through the context's handle,
    /// not by cancelling the handler's task, so a long call would otherwise run on after its client
    /// left. Cancelled, the store interrupts the statement under way.
    func cancellable<T: Sendable>(_ context: ServerContext, _ body: @Sendable @escaping () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await context.cancellation.cancelled
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else { throw CancellationError() }
            return first
        }
    }

    /// ``handle(_:_:)`` and ``cancellable(_:_:)`` together: the usual shape of a handler whose
    /// work may take long.
    func handleCancellable<T: Sendable>(_ method: String, _ context: ServerContext, _ body: @Sendable @escaping () async throws -> T) async throws -> T {
        try await handle(method) { try await cancellable(context, body) }
    }
}
