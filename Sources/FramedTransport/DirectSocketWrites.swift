#if canImport(Glibc)
    import Glibc
#endif
import GRPCCore
import NIOCore
import NIOPosix

// A client connection's socket is opened on this side (`connectedSocket(_:)`) and handed to
// SwiftNIO, so that a call's frames can be written into it at once from the connection's event
// loop (`FramedClientConnection.sendCall(stream:descriptor:request:)`) without SwiftNIO's
// pipeline, its queue of pending writes and a `ByteBuffer` for them (docs/performance.md, "A
// call's frames written straight into the socket"). SwiftNIO keeps the descriptor, reads it and
// closes it. A direct write is made only on the event loop, where the channel cannot close
// under it, and only while SwiftNIO holds no write of the connection's not yet wholly on the
// socket (`FramedClientConnection.writesInNIO`): the bytes of two writes never mix.

extension FramedClientTransport {
    /// A Unix socket connected to `path`, non-blocking, for SwiftNIO to take. A daemon whose
    /// queue of connections to accept is full refuses it with EAGAIN (an `IOError`, as
    /// SwiftNIO's own connect threw).
    static func connectedSocket(_ path: String) throws -> CInt {
        do {
            return try connectUnixSocket(to: path, nonBlocking: true)
        } catch {
            switch error {
            case .pathTooLong: throw SocketAddressError.unixDomainSocketPathTooLong
            case .socket(let code): throw IOError(errnoCode: code, reason: "socket")
            case .connect(let code): throw IOError(errnoCode: code, reason: "connect")
            }
        }
    }
}

extension FramedClientConnection {
    /// Writes a direct call's opening (``FramedClientTransport/writeCallFrames(into:stream:descriptor:request:)``)
    /// straight into the socket, what it cannot take at once after it through SwiftNIO. On the
    /// connection's event loop (where a client's tasks run when they prefer its executor) at
    /// once; from another thread in a task on the loop, whose promise says whether it left.
    func sendCall(stream: UInt32, descriptor: MethodDescriptor, request: [UInt8]) -> FramedClientTransport.Sent {
        let onLoop = channel.eventLoop.inEventLoop
        let size = FramedClientTransport.callFramesSize(descriptor, request: request)
        if onLoop, size <= Self.framesOnTheStack {
            return withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { buffer in
                let count = FramedClientTransport.writeCallFrames(
                    into: buffer, stream: stream, descriptor: descriptor, request: request)
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                return writeOnLoop(bytes) { [channel] written in
                    var rest = channel.allocator.buffer(capacity: count - written)
                    rest.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[written...]))
                    return rest
                }
            }
        }
        let frames = FramedClientTransport.callFrames(
            stream: stream, descriptor: descriptor, request: request, allocator: channel.allocator)
        if onLoop { return writeOnLoop(frames) }
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.eventLoop.execute { [self] in
            if case .atOnce(left: true) = writeOnLoop(frames) {
                written.succeed()
            } else {
                written.fail(ChannelError.ioOnClosedChannel)
            }
        }
        return .later(written.futureResult)
    }

    /// Frames up to this size are made on the stack; larger ones in a `ByteBuffer`, whose rest
    /// SwiftNIO then takes without a copy.
    static let framesOnTheStack = 64 * 1024

    /// Writes `frames` from the event loop, as ``writeOnLoop(_:rest:)`` does.
    private func writeOnLoop(_ frames: ByteBuffer) -> FramedClientTransport.Sent {
        frames.withUnsafeReadableBytes { bytes in
            writeOnLoop(bytes) { written in
                var rest = frames
                rest.moveReaderIndex(forwardBy: written)
                return rest
            }
        }
    }

    /// Writes `bytes` from the event loop: into the socket as far as it takes them at once
    /// (``writeDirectly(_:)``), then what `rest` makes of the others (given how many were
    /// written) through SwiftNIO. Whether the request left: bytes the socket took count as
    /// sent, and so does a rest SwiftNIO takes on an open channel.
    private func writeOnLoop(
        _ bytes: UnsafeRawBufferPointer, rest: (_ written: Int) -> ByteBuffer
    ) -> FramedClientTransport.Sent {
        let (written, failed) = writeDirectly(bytes)
        if failed || written == bytes.count { return .atOnce(left: written > 0 || !failed) }
        channel.writeAndFlush(rest(written), promise: nil)
        return .atOnce(left: written > 0 || channel.isActive)
    }

    /// Writes as much of `bytes` into the socket as it takes at once, from the event loop, while
    /// SwiftNIO holds none of the connection's writes (none at all otherwise). `failed` when
    /// the connection had closed, or when the socket refused a write with an error (a daemon
    /// that had closed the connection: EPIPE), which closes the channel as SwiftNIO's own write
    /// would.
    private func writeDirectly(_ bytes: UnsafeRawBufferPointer) -> (written: Int, failed: Bool) {
        guard channel.isActive else { return (0, true) }
        guard writesInNIO.load(ordering: .relaxed) == 0 else { return (0, false) }
        let sent = sendWhatFits(bytes, into: socket)
        // The daemon closed the connection (EPIPE, ECONNRESET): close it here too, which fails
        // the calls under way with `unavailable`.
        if sent.failed { channel.close(promise: nil) }
        return sent
    }
}
