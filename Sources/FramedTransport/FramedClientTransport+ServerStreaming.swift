import GRPCCore
import NIOCore

extension FramedClientTransport {
    /// Makes a server-streaming call without GRPCCore's client machinery: the open frame, the
    /// request and the end leave in one write, and `body` reads the responses as they arrive.
    /// The responses end when an OK status arrives, or throw an `RPCError` with the status's code,
    /// message and metadata, as a GRPCCore call's do. A call that `body` leaves before its status
    /// came (done early, or thrown out of), or whose task is cancelled, is cancelled at the
    /// server. It sets no deadline: a call with one goes through GRPCCore.
    public func serverStreaming<T>(
        _ descriptor: MethodDescriptor, request: [UInt8],
        _ body: (DirectResponses) async throws -> T
    ) async throws -> T {
        let connection = try beginCall()
        defer { callEnded() }
        let (handler, (id, parts)) = try await registered(on: connection) { $0.register() }
        let channel = handler.channel
        channel.writeAndFlush(
            Self.callFrames(stream: id, descriptor: descriptor, request: request, allocator: channel.allocator),
            promise: nil)
        defer {
            if handler.unregister(id) {
                channel.writeAndFlush(channel.allocator.frame(stream: id, kind: .cancel), promise: nil)
            }
        }
        return try await body(DirectResponses(parts: parts))
    }
}

/// The response messages of a direct server-streaming call, in order; they end with the call's
/// status (or throw its error).
public struct DirectResponses: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = any Error

    let parts: FramedClientConnection.Responses

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(parts: parts.makeAsyncIterator())
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var parts: FramedClientConnection.Responses.AsyncIterator
        var ended = false

        public mutating func next() async throws -> [UInt8]? {
            while !ended {
                guard let part = try await parts.next() else {
                    // The parts end without a status only when the waiting task is cancelled.
                    ended = true
                    throw RPCError(code: .cancelled, message: "the call was cancelled")
                }
                switch part {
                case .metadata:
                    continue
                case .message(let bytes):
                    return bytes
                case .status(let status, let metadata):
                    ended = true
                    if let code = RPCError.Code(status.code) {
                        throw RPCError(code: code, message: status.message, metadata: metadata)
                    }
                }
            }
            return nil
        }
    }
}
