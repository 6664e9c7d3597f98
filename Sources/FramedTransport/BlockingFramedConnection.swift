#if canImport(Glibc)
    import Glibc
#endif
import GRPCCore
import NIOCore

/// A framed connection whose calls block the calling thread, as libpq's `PQexec` does: a call
/// writes its three frames with one system call and reads its answer with the next, on the
/// calling thread. No event loop, no task, no promise: a point read costs its client a fraction
/// of what ``FramedClientTransport`` costs (which is for Swift concurrency, many calls at once).
/// Nothing is allocated for a call that needs no more room than the last: its frames are
/// written into a buffer the connection keeps, a successful status without a message is told
/// from its bytes, and ``unary(_:request:timeout:reading:)`` hands the answer over where it lies
/// in the connection's buffer (a point read's client instructions 14,135 → 10,829).
///
/// One call at a time: use a connection from one thread (it is not `Sendable`), or one each.
/// A call's answer is bounded by `maximumResponseSize`; a call given a timeout that passes is
/// cancelled (the daemon is told) and fails with `deadlineExceeded`, and the connection stays
/// usable (frames of a call given up are skipped). Errors are `RPCError`s, as GRPCCore's are.
public final class BlockingFramedConnection {
    public let path: String
    public let maximumResponseSize: Int
    private var socket: Int32 = -1
    private var nextStream: UInt32 = 1
    /// Bytes read: those not yet taken are `inbound[readIndex..<writeIndex]`.
    private var inbound = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
    private var readIndex = 0, writeIndex = 0
    /// The frames of the call being made, kept for the next (grown when a request needs it).
    private var outbound = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_096, alignment: 8)
    /// The most bytes each buffer keeps between calls: one grown for a large request or answer
    /// is let go after its call rather than held for the connection's life.
    private static let keptBufferBytes = 65_536

    /// Connects to the framed socket at `path`.
    public init(path: String, maximumResponseSize: Int = 64 * 1024 * 1024) throws(RPCError) {
        self.path = path
        self.maximumResponseSize = maximumResponseSize
        try connect()
    }

    deinit {
        close()
        inbound.deallocate()
        outbound.deallocate()
    }

    /// Closes the connection; calls after it fail with `unavailable`.
    public func close() {
        if socket >= 0 { Glibc.close(socket) }
        socket = -1
    }

    /// A unary call of `method`: its one answer message's bytes.
    public func unary(_ method: MethodDescriptor, request: [UInt8], timeout: Duration? = nil) throws(RPCError)
        -> [UInt8]
    {
        var answer: [UInt8] = []
        try unary(method, request: request, timeout: timeout) { answer = [UInt8]($0) }
        return answer
    }

    /// A unary call of `method`, its one answer message's bytes handed to `read`, valid only
    /// inside it (they lie in the connection's buffer, not copied out). Not generic, so that a
    /// caller in another module needs no generic metadata to call it.
    public func unary(
        _ method: MethodDescriptor, request: [UInt8], timeout: Duration? = nil,
        reading read: (UnsafeRawBufferPointer) -> Void
    ) throws(RPCError) {
        let count = try call(method, request: request, timeout: timeout, message: read)
        guard count == 1 else {
            throw RPCError(code: .internalError, message: "a unary call was answered with \(count) messages, not one")
        }
    }

    /// A server-streaming call of `method`: every answer message's bytes, once the status came.
    public func serverStreaming(_ method: MethodDescriptor, request: [UInt8], timeout: Duration? = nil)
        throws(RPCError)
        -> [[UInt8]]
    {
        var messages: [[UInt8]] = []
        _ = try call(method, request: request, timeout: timeout) { messages.append([UInt8]($0)) }
        return messages
    }

    /// Makes a call, handing each answer message's bytes to `message` as it is read; returns how
    /// many there were, once the status came and said the call succeeded.
    private func call(
        _ method: MethodDescriptor, request: [UInt8], timeout: Duration?, message: (UnsafeRawBufferPointer) -> Void
    ) throws(RPCError) -> Int {
        guard socket >= 0 else { throw RPCError(code: .unavailable, message: "the connection to \(path) is closed") }
        defer { releaseLargeBuffers() }
        let stream = nextStream
        nextStream = nextStream == UInt32.max ? 1 : nextStream + 1
        let frames = writeCallFrames(stream: stream, method: method, request: request)
        do {
            try send(frames)
        } catch {
            // Not written: the daemon closed the connection (as idle, say) before the call left,
            // so it never saw it. Once more, on a new connection.
            close()
            try connect()
            try send(frames)
        }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        var messages = 0
        var received = 0
        while true {
            let (kind, frameStream, payload) = try readFrame(until: deadline, stream: stream)
            guard frameStream == stream else { continue } // a call given up on
            switch kind {
            case .metadata:
                continue
            case .message:
                received += payload.count
                guard received <= maximumResponseSize else {
                    try? send(Self.cancelFrame(stream: stream))
                    throw RPCError(
                        code: .resourceExhausted,
                        message: "the answer is over the client's limit of \(maximumResponseSize) bytes")
                }
                messages += 1
                message(UnsafeRawBufferPointer(rebasing: inbound[payload]))
            case .status:
                try checkStatus(UnsafeRawBufferPointer(rebasing: inbound[payload]))
                return messages
            case .open, .end, .cancel:
                close()
                throw RPCError(code: .internalError, message: "a frame of a kind servers do not send, from \(path)")
            }
        }
    }

    /// Throws the error a status frame's payload tells of, if it tells of one.
    private func checkStatus(_ payload: UnsafeRawBufferPointer) throws(RPCError) {
        // A success without a message or trailing metadata, as most answers end: the code, and
        // two counts of nothing.
        if payload.count == 9, payload[0] == 0, payload.loadUnaligned(fromByteOffset: 1, as: UInt64.self) == 0 {
            return
        }
        var status = ByteBuffer(bytes: payload)
        guard let raw = status.readInteger(as: UInt8.self), let message = try? status.readShortString(),
            let metadata = try? status.readMetadata()
        else {
            close()
            throw RPCError(code: .internalError, message: "a malformed status frame from \(path)")
        }
        let code = Status.Code(rawValue: Int(raw)) ?? .unknown
        if let error = RPCError.Code(code) { throw RPCError(code: error, message: message, metadata: metadata) }
    }

    /// The bytes of the two buffers the connection holds between calls (for tests).
    var heldBufferBytes: Int { inbound.count + outbound.count }

    /// Lets go of a buffer grown past ``keptBufferBytes`` by the call just made: the outbound
    /// one, and the inbound one when it holds no unread byte.
    private func releaseLargeBuffers() {
        if outbound.count > Self.keptBufferBytes {
            outbound.deallocate()
            outbound = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_096, alignment: 8)
        }
        if inbound.count > Self.keptBufferBytes, readIndex == writeIndex {
            inbound.deallocate()
            inbound = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.keptBufferBytes, alignment: 8)
            (readIndex, writeIndex) = (0, 0)
        }
    }

    /// Writes a call's opening frames into ``outbound`` (made larger if they would not fit).
    private func writeCallFrames(stream: UInt32, method: MethodDescriptor, request: [UInt8]) -> UnsafeRawBufferPointer {
        let size = FramedClientTransport.callFramesSize(method, request: request)
        if outbound.count < size {
            outbound.deallocate()
            outbound = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        }
        let written = FramedClientTransport.writeCallFrames(
            into: outbound, stream: stream, descriptor: method, request: request)
        return UnsafeRawBufferPointer(rebasing: outbound[0..<written])
    }

    // MARK: Frames

    /// Frames are made as ``FramedClientTransport``'s are, in buffers of their own.
    private static let allocator = ByteBufferAllocator()

    private static func cancelFrame(stream: UInt32) -> ByteBuffer {
        allocator.frame(stream: stream, kind: .cancel)
    }

    /// The next frame read, waiting for its bytes until `deadline`; past it, the call on
    /// `stream` is cancelled. Its payload is where the range says in ``inbound``, until the next
    /// read.
    private func readFrame(until deadline: ContinuousClock.Instant?, stream: UInt32) throws(RPCError)
        -> (Frame.Kind, UInt32, Range<Int>)
    {
        try fill(Frame.headerSize, until: deadline, stream: stream)
        let length = Int(integer(at: readIndex)), frameStream = integer(at: readIndex + 4)
        guard let kind = Frame.Kind(rawValue: inbound[readIndex + 8]) else {
            close()
            throw RPCError(code: .internalError, message: "a frame of unknown kind from \(path)")
        }
        guard length <= maximumResponseSize else {
            // Too large to keep: its call is given up, and its bytes read past.
            readIndex += Frame.headerSize
            try discard(length, until: deadline, stream: stream)
            guard frameStream == stream else { return try readFrame(until: deadline, stream: stream) }
            try? send(Self.cancelFrame(stream: stream))
            throw RPCError(
                code: .resourceExhausted,
                message: "an answer of \(length) bytes or more, over the client's limit of \(maximumResponseSize)")
        }
        try fill(Frame.headerSize + length, until: deadline, stream: stream)
        let start = readIndex + Frame.headerSize
        readIndex = start + length
        return (kind, frameStream, start..<start + length)
    }

    private func integer(at index: Int) -> UInt32 {
        inbound[index..<index + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Reads past the next `count` bytes, keeping none.
    private func discard(_ count: Int, until deadline: ContinuousClock.Instant?, stream: UInt32) throws(RPCError) {
        var left = count
        while left > 0 {
            if readIndex == writeIndex { try fill(1, until: deadline, stream: stream) }
            let taken = min(left, writeIndex - readIndex)
            readIndex += taken
            left -= taken
        }
    }

    /// Reads until `count` bytes are unread, moving them to the front of the buffer (or to a
    /// larger one) when they would not fit.
    private func fill(_ count: Int, until deadline: ContinuousClock.Instant?, stream: UInt32) throws(RPCError) {
        if readIndex == writeIndex { (readIndex, writeIndex) = (0, 0) }
        if inbound.count - readIndex < count {
            let unread = writeIndex - readIndex
            let moved = UnsafeMutableRawBufferPointer.allocate(byteCount: max(inbound.count, count), alignment: 8)
            moved.copyMemory(from: UnsafeRawBufferPointer(rebasing: inbound[readIndex..<writeIndex]))
            inbound.deallocate()
            (inbound, readIndex, writeIndex) = (moved, 0, unread)
        }
        while writeIndex - readIndex < count {
            // Read first, as libpq does: with the other core busy, the daemon woken by the request
            // usually runs at once on this core and has answered by the time this thread runs
            // again, and a wait first cost a `poll` that found the answer there (0.07 wake-ups a
            // read in the installed, loaded runs).
            // ! the buffer is allocated, so it has an address.
            let got = Glibc.recv(
                socket, inbound.baseAddress! + writeIndex, inbound.count - writeIndex, Int32(MSG_DONTWAIT))
            if got > 0 {
                writeIndex += got
                continue
            }
            if got == 0 || (errno != EINTR && errno != EAGAIN) {
                close()
                throw RPCError(
                    code: .unavailable, message: "the connection to \(path) closed before the call was answered")
            }
            if errno == EINTR { continue }
            // Nothing yet: waiting in poll for input only, not in recv: a reader sleeping in recv
            // on a Unix socket is woken, for nothing, when the daemon reads the request (the
            // socket's waiters share one queue), and sleeps again: two switches a call, not one.
            if let deadline { try wait(until: deadline, stream: stream) } else { waitForInput() }
        }
    }

    /// Waits until the socket can be read (or has closed).
    private func waitForInput() {
        var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while poll(&ready, 1, -1) < 0, errno == EINTR {}
    }

    /// Waits until the socket can be read or `deadline` passes; then the call is cancelled.
    private func wait(until deadline: ContinuousClock.Instant, stream: UInt32) throws(RPCError) {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                try? send(Self.cancelFrame(stream: stream))
                throw RPCError(code: .deadlineExceeded, message: "the call was not answered within its timeout")
            }
            var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            // Rounded up, so that a wait does not end just before the deadline.
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
            if poll(&ready, 1, Int32(clamping: milliseconds)) > 0 { return }
        }
    }

    /// Sends a frame made in a buffer of its own (a cancel: rare), copied out.
    private func send(_ frame: ByteBuffer) throws(RPCError) {
        try Array(frame.readableBytesView).withUnsafeBufferPointer { (bytes) throws(RPCError) in
            try send(UnsafeRawBufferPointer(bytes))
        }
    }

    private func send(_ bytes: UnsafeRawBufferPointer) throws(RPCError) {
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let written = Glibc.send(socket, rest.baseAddress, rest.count, Int32(MSG_NOSIGNAL))
            if written < 0, errno == EINTR { continue }
            guard written > 0 else {
                throw RPCError(
                    code: .unavailable, message: "cannot write to \(path): \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    private func connect() throws(RPCError) {
        let fd: Int32
        do {
            fd = try connectUnixSocket(to: path, nonBlocking: false)
        } catch {
            switch error {
            case .pathTooLong:
                throw RPCError(code: .invalidArgument, message: "the path \(path) is too long for a Unix socket")
            case .socket(let code):
                throw RPCError(code: .unavailable, message: "cannot make a socket: \(String(cString: strerror(code)))")
            case .connect(let code):
                throw RPCError(
                    code: .unavailable, message: "cannot connect to \(path): \(String(cString: strerror(code)))")
            }
        }
        socket = fd
        (readIndex, writeIndex) = (0, 0)
    }
}
