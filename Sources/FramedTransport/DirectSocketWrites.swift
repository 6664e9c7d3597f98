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
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SocketAddressError.unixDomainSocketPathTooLong
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let fd = Glibc.socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw IOError(errnoCode: code, reason: "connect")
        }
        return fd
    }
}

extension FramedClientConnection {
    /// Writes a direct call's opening (``FramedClientTransport/writeCallFrames(into:stream:descriptor:request:)``)
    /// straight into the socket, what it cannot take at once after it through SwiftNIO. On the
    /// connection's event loop (where a client's tasks run when they prefer its executor) at
    /// once; from another thread in a task on the loop, whose promise says whether it left.
    func sendCall(stream: UInt32, descriptor: MethodDescriptor, request: [UInt8]) -> FramedClientTransport.Sent {
        let size = FramedClientTransport.callFramesSize(descriptor, request: request)
        guard channel.eventLoop.inEventLoop, size <= Self.framesOnTheStack else {
            let frames = FramedClientTransport.callFrames(
                stream: stream, descriptor: descriptor, request: request, allocator: channel.allocator)
            guard !channel.eventLoop.inEventLoop else { return writeOnLoop(frames) }
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
        return withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { buffer in
            let count = FramedClientTransport.writeCallFrames(
                into: buffer, stream: stream, descriptor: descriptor, request: request)
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            let (written, failed) = writeDirectly(bytes)
            if failed || written == count { return .atOnce(left: written > 0 || !failed) }
            var rest = channel.allocator.buffer(capacity: count - written)
            rest.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[written...]))
            return handToNIO(rest, afterWriting: written)
        }
    }

    /// Frames up to this size are made on the stack; larger ones in a `ByteBuffer`, whose rest
    /// SwiftNIO then takes without a copy.
    static let framesOnTheStack = 64 * 1024

    /// Writes `frames` from the event loop, as ``writeDirectly(_:)`` and then SwiftNIO do.
    private func writeOnLoop(_ frames: ByteBuffer) -> FramedClientTransport.Sent {
        var frames = frames
        let (written, failed) = frames.withUnsafeReadableBytes { writeDirectly($0) }
        if failed || written == frames.readableBytes { return .atOnce(left: written > 0 || !failed) }
        frames.moveReaderIndex(forwardBy: written)
        return handToNIO(frames, afterWriting: written)
    }

    /// Writes as much of `bytes` into the socket as it takes at once, from the event loop, while
    /// SwiftNIO holds none of the connection's writes (none at all otherwise). `failed` when
    /// the connection had closed, or when the socket refused a write with an error (a daemon
    /// that had closed the connection: EPIPE), which closes the channel as SwiftNIO's own write
    /// would.
    private func writeDirectly(_ bytes: UnsafeRawBufferPointer) -> (written: Int, failed: Bool) {
        guard channel.isActive else { return (0, true) }
        guard writesInNIO.load(ordering: .relaxed) == 0 else { return (0, false) }
        var written = 0
        while written < bytes.count {
            // `!`: a call's frames are never empty (three headers at least).
            let result = Glibc.send(socket, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
            if result > 0 {
                written += result
            } else if result < 0, errno == EINTR {
                continue
            } else if result < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                break
            } else {
                // The daemon closed the connection (EPIPE, ECONNRESET): close it here too,
                // which fails the calls under way with `unavailable`.
                channel.close(promise: nil)
                return (written, true)
            }
        }
        return (written, false)
    }

    /// Hands SwiftNIO what the socket did not take at once. Whether the request left: bytes the
    /// socket took count as sent, and so does a rest SwiftNIO takes on an open channel.
    private func handToNIO(_ rest: ByteBuffer, afterWriting written: Int) -> FramedClientTransport.Sent {
        channel.writeAndFlush(rest, promise: nil)
        return .atOnce(left: written > 0 || channel.isActive)
    }
}
