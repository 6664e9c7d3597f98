import GRPCCore
import Synchronization

/// The answer to a direct unary call, gathered from its frames on the event loop and handed to
/// the waiting caller when the status arrives; or, for a server-streaming call gathered whole
/// (``FramedClientTransport/gatheredServerStreaming(_:request:)``), its responses.
final class UnaryCall: Sendable {
    /// How many messages an answer holds.
    enum Answer: Sendable {
        /// Exactly one: a unary call's.
        case one
        /// Any number, kept in order: a server-streaming call's.
        case many
    }

    private let answer: Answer

    private struct State {
        var message: [UInt8]?
        /// The messages after the first, for ``Answer/many``.
        var later: [[UInt8]] = []
        var messages = 0
        var outcome: Result<[UInt8], RPCError>?
        /// Unsafe (not checked): resumed once, by whichever of ``settle(_:)`` and ``wait(_:)``
        /// comes second, the outcome and the waiter being set under the lock, each once. A
        /// checked continuation cost every call an allocation and its checks.
        var waiter: UnsafeContinuation<[UInt8], any Error>?
    }
    private let state = Mutex(State())

    init(_ answer: Answer = .one) {
        self.answer = answer
    }

    func received(_ message: [UInt8]) {
        let answer = answer
        state.withLock { state in
            if state.messages > 0, answer == .many { state.later.append(message) } else { state.message = message }
            state.messages += 1
        }
    }

    /// Every message of an ``Answer/many`` call that has ended well, in order.
    func messages() -> [[UInt8]] {
        state.withLock { state in state.message.map { [$0] + state.later } ?? [] }
    }

    /// The call's status: its message if OK, else the error the status describes.
    func finished(_ status: Status, metadata: Metadata) {
        let answer = answer
        let outcome = state.withLock { state -> Result<[UInt8], RPCError> in
            if let code = RPCError.Code(status.code) {
                return .failure(RPCError(code: code, message: status.message, metadata: metadata))
            }
            if answer == .many { return .success(state.message ?? []) }
            guard state.messages == 1, let message = state.message else {
                return .failure(
                    RPCError(
                        code: .internalError,
                        message: "a unary call was answered with \(state.messages) messages, not one"))
            }
            return .success(message)
        }
        settle(outcome)
    }

    func fail(_ error: RPCError) {
        settle(.failure(error))
    }

    /// The first outcome wins; a caller already waiting is resumed with it.
    private func settle(_ outcome: Result<[UInt8], RPCError>) {
        let waiter = state.withLock { state -> UnsafeContinuation<[UInt8], any Error>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: outcome.mapError { $0 as any Error })
    }

    /// Resumes `waiter` with the outcome: at once if it is known, else when it comes. The caller
    /// makes the continuation itself (`withUnsafeThrowingContinuation { call.wait($0) }`): an
    /// async function around it cost a point read a frame and a switch of executors.
    func wait(_ waiter: UnsafeContinuation<[UInt8], any Error>) {
        let ready = state.withLock { state -> Result<[UInt8], RPCError>? in
            if let outcome = state.outcome { return outcome }
            state.waiter = waiter
            return nil
        }
        if let ready { waiter.resume(with: ready.mapError { $0 as any Error }) }
    }
}
