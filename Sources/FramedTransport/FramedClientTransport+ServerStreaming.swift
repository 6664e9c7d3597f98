#if canImport(Glibc)
    import Glibc
#endif
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

    /// Makes a server-streaming call as ``serverStreaming(_:request:_:)`` does, on a connection
    /// of its own, for a caller that may read the responses more slowly than the daemon sends
    /// them (a fetch handed over batch by batch, a history followed, a backup written to a slow
    /// disk): while more than 4 MiB of them wait for `body` (``InboundFlow``), the connection
    /// stops reading its socket, so the daemon's writes wait rather than this process's memory
    /// filling with the rest of the result, and it reads again once `body` has taken all but 1
    /// MiB. A stream left waiting longer than the daemon's stall timeout (its
    /// `--stream-stall-timeout`, 20 seconds) is ended by the daemon, as over HTTP/2. The
    /// client's other calls, `body`'s own among them, go on over its shared connection. The
    /// connection is opened for the call and closed when `body` returns or throws (which
    /// cancels the call at the daemon if it had not ended).
    public func serverStreamingOnOwnConnection<T>(
        _ descriptor: MethodDescriptor, request: [UInt8],
        _ body: (DirectResponses) async throws -> T
    ) async throws -> T {
        try countCall()
        let opened: FramedClientConnection?
        do {
            opened = try await openOwnConnection()
        } catch {
            callEnded()
            throw error
        }
        guard let handler = opened else {
            // The daemon is too busy accepting connections: the call goes on the shared one.
            callEnded()
            return try await serverStreaming(descriptor, request: request, body)
        }
        defer { callEnded() }
        let channel = handler.channel
        defer { channel.close(promise: nil) }
        guard let (id, parts) = handler.register(flow: InboundFlow(channel: channel, statistics: responseFlow)) else {
            throw RPCError(code: .unavailable, message: "the connection to \(path) had closed; the call was not sent")
        }
        channel.writeAndFlush(
            Self.callFrames(stream: id, descriptor: descriptor, request: request, allocator: channel.allocator),
            promise: nil)
        return try await body(DirectResponses(parts: parts))
    }

    /// A connection of a call's own; nil when the daemon stays too busy to take one. A daemon
    /// whose queue of connections to accept is full (a burst of streams, each asking for a
    /// connection of its own) refuses one with EAGAIN: tried again for about a second, as the
    /// daemon takes them, before the call makes do with the shared connection (unbounded, as
    /// every call was before).
    private func openOwnConnection() async throws -> FramedClientConnection? {
        var attempt = 0
        while true {
            do {
                return try await Self.open(path, on: eventLoop).get()
            } catch let error as IOError where error.errnoCode == EAGAIN {
                guard attempt < Self.busyConnectAttempts else { return nil }
                attempt += 1
                try await Task.sleep(for: .milliseconds(5 * attempt))
            } catch {
                throw RPCError(code: .unavailable, message: "cannot connect to \(path): \(error)")
            }
        }
    }

    /// Attempts after a busy daemon's refusal: 5, 10, … 100 ms apart, about a second in all.
    static let busyConnectAttempts = 20
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
