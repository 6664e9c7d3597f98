import GRPCCore
import NIOCore
import Synchronization

extension FramedClientTransport {
    /// Makes a unary call without GRPCCore's client machinery (its task group, its streams of
    /// request and response parts): the open frame, the request and the end leave in one write,
    /// and the caller resumes when the status arrives. It fails as a GRPCCore call does, with an
    /// `RPCError` carrying the status's code, message and metadata; cancelling the caller's task
    /// cancels the call. It sets no deadline: a call with one goes through GRPCCore.
    ///
    /// A call whose request could not be written because its connection had just closed (the
    /// daemon closing it as idle while the call set off) never reached the daemon: it is sent
    /// again, once, on a new connection.
    public nonisolated(nonsending) func unary(_ descriptor: MethodDescriptor, request: [UInt8]) async throws -> [UInt8]
    {
        // The first attempt without a closure around it: each async frame and each wait costs
        // the caller a switch of executors, which asks for the task's preferred executor under
        // a lock (docs/performance.md, "A point read's waits made fewer").
        do {
            return try await attempt(descriptor, request: request, answer: UnaryCall(.one))
        } catch is UnsentCall {
            return try await sentAgain { () async throws -> [UInt8] in
                try await attempt(descriptor, request: request, answer: UnaryCall(.one))
            }
        }
    }

    /// Makes a server-streaming call as ``unary(_:request:)`` makes a unary one: its responses
    /// are gathered on the connection as they arrive and handed to the caller all at once, in
    /// order, when the status arrives, without a stream of response parts to read them from.
    /// For an answer known to be small (a fetch with a small limit): the caller holds every
    /// response at once, however many the daemon sends.
    public nonisolated(nonsending) func gatheredServerStreaming(_ descriptor: MethodDescriptor, request: [UInt8])
        async throws -> [[UInt8]]
    {
        try await resentOnceIfUnsent { () async throws -> [[UInt8]] in
            let call = UnaryCall(.many)
            _ = try await attempt(descriptor, request: request, answer: call)
            return call.messages()
        }
    }

    /// `attempt`, made once more on a new connection if its request did not leave.
    private nonisolated(nonsending) func resentOnceIfUnsent<T>(_ attempt: () async throws -> T) async throws -> T {
        do {
            return try await attempt()
        } catch is UnsentCall {
            return try await sentAgain(attempt)
        }
    }

    /// `attempt` made again, after a first whose request did not leave: a second that does not
    /// leave either fails the call.
    private nonisolated(nonsending) func sentAgain<T>(_ attempt: () async throws -> T) async throws -> T {
        do {
            return try await attempt()
        } catch is UnsentCall {
            // The new connection closed too before the call left (a daemon at its connection
            // limit closes new ones at once): unavailable, as gRPC says it.
            throw RPCError(
                code: .unavailable,
                message:
                    "the call was not sent: the daemon closed the connection before it left (at its connection limit?)"
            )
        }
    }

    /// One attempt of a direct call answered through `call`: its first message (for a unary
    /// call, its only one); `UnsentCall` when the request did not leave.
    private nonisolated(nonsending) func attempt(
        _ descriptor: MethodDescriptor, request: [UInt8], answer call: UnaryCall
    )
        async throws -> [UInt8]
    {
        let connection = try beginCall()
        defer { callEnded() }
        // Registered without a wait on a connection already made (the usual case).
        let (handler, id) =
            if let known = try registeredAtOnce(on: connection, { $0.register(call) }) { known } else {
                try await registeredOnceConnected(connection) { $0.register(call) }
            }
        let sent = handler.sendCall(stream: id, descriptor: descriptor, request: request)
        do {
            return try await withTaskCancellationHandler {
                try await withUnsafeThrowingContinuation { call.wait($0) }
            } onCancel: {
                if handler.unregister(id) {
                    let channel = handler.channel
                    channel.writeAndFlush(channel.allocator.frame(stream: id, kind: .cancel), promise: nil)
                }
                call.fail(RPCError(code: .cancelled, message: "the call was cancelled"))
            }
        } catch let error as RPCError where error.code == .unavailable {
            // Not written at all: the daemon cannot have seen it.
            if await !sent.left() {
                forget(connection)
                throw UnsentCall()
            }
            throw error
        }
    }
}

/// A call whose request was never written: its connection had closed.
struct UnsentCall: Error {}

extension FramedClientTransport {
    /// Whether a call's request left.
    enum Sent {
        /// Written on the connection's event loop, where the write is done at once: the
        /// request left unless the connection had closed or the write closed it (a connection
        /// the daemon had closed fails it with EPIPE, and the channel is closed before the write
        /// returns).
        /// Bytes the socket could not take at once still count as sent.
        case atOnce(left: Bool)
        /// Written from another thread, the write done later on the loop: its promise says.
        case later(EventLoopFuture<Void>)

        func left() async -> Bool {
            switch self {
            case .atOnce(let left): left
            case .later(let written): (try? await written.get()) != nil
            }
        }
    }
}

extension FramedClientTransport {
    /// A direct call's opening: the open frame (no metadata), its one request message and the
    /// end, for one write.
    static func callFrames(
        stream: UInt32, descriptor: MethodDescriptor, request: [UInt8], allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        let total = callFramesSize(descriptor, request: request)
        var frames = allocator.buffer(capacity: total)
        frames.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { bytes in
            writeCallFrames(into: bytes, stream: stream, descriptor: descriptor, request: request)
        }
        return frames
    }

    /// How many bytes ``writeCallFrames(into:stream:descriptor:request:)`` writes.
    static func callFramesSize(_ descriptor: MethodDescriptor, request: [UInt8]) -> Int {
        let methodSize = descriptor.service.fullyQualifiedService.utf8.count + 1 + descriptor.method.utf8.count
        return 3 * Frame.headerSize + 4 + methodSize + 4 + request.count
    }

    /// Writes a direct call's opening (``callFrames(stream:descriptor:request:allocator:)``) at the
    /// start of `bytes`, which has room for ``callFramesSize(_:request:)`` of them; returns that
    /// size. In one go: each of ByteBuffer's small writes checks its storage and access on its own.
    static func writeCallFrames(
        into bytes: UnsafeMutableRawBufferPointer, stream: UInt32, descriptor: MethodDescriptor, request: [UInt8]
    ) -> Int {
        // The path is written from its two parts: `fullyQualifiedMethod` makes a string of them
        // through the service's description each time (1,400 instructions a call).
        let service = descriptor.service.fullyQualifiedService, method = descriptor.method
        let serviceSize = service.utf8.count
        let methodSize = serviceSize + 1 + method.utf8.count
        let openSize = 4 + methodSize + 4
        let total = callFramesSize(descriptor, request: request)
        precondition(bytes.count >= total, "no room for the call's frames")
        func header(at offset: Int, length: Int, kind: Frame.Kind) {
            bytes.storeBytes(of: UInt32(length).bigEndian, toByteOffset: offset, as: UInt32.self)
            bytes.storeBytes(of: stream.bigEndian, toByteOffset: offset + 4, as: UInt32.self)
            bytes.storeBytes(of: kind.rawValue, toByteOffset: offset + 8, as: UInt8.self)
        }
        var offset = 0
        // The open frame: the path, and no metadata.
        header(at: offset, length: openSize, kind: .open)
        offset += Frame.headerSize
        bytes.storeBytes(of: UInt32(methodSize).bigEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
        UnsafeMutableRawBufferPointer(rebasing: bytes[offset..<(offset + serviceSize)]).copyBytes(from: service.utf8)
        bytes[offset + serviceSize] = UInt8(ascii: "/")
        UnsafeMutableRawBufferPointer(rebasing: bytes[(offset + serviceSize + 1)..<(offset + methodSize)])
            .copyBytes(from: method.utf8)
        offset += methodSize
        bytes.storeBytes(of: UInt32(0), toByteOffset: offset, as: UInt32.self)
        offset += 4
        // The request, and the end.
        header(at: offset, length: request.count, kind: .message)
        offset += Frame.headerSize
        request.withUnsafeBytes { request in
            UnsafeMutableRawBufferPointer(rebasing: bytes[offset..<(offset + request.count)]).copyMemory(from: request)
        }
        offset += request.count
        header(at: offset, length: 0, kind: .end)
        return total
    }
}
