#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import NIOCore
import Synchronization

/// Why a listening socket could not be made or adopted.
struct ListeningSocketError: Error, CustomStringConvertible {
    let description: String

    init(_ call: String, path: String, code: Int32) {
        description = "\(call) \(path): \(String(cString: strerror(code))) (errno \(code))"
    }

    init(_ description: String) {
        self.description = description
    }
}

/// A listening Unix socket whose connections are accepted by a thread of its own rather than by
/// SwiftNIO's server channel, which gives no connection's descriptor: the framed transport hands
/// each accepted socket to SwiftNIO as a connected one and keeps its descriptor, so that answers
/// can be written straight into it (``SocketAnswers``). Out of file descriptors, accepting waits
/// a second, as SwiftNIO's `AcceptBackoffHandler` did, rather than spinning.
final class SocketAcceptor: Sendable {
    /// The listening socket (non-blocking), closed by the accepting thread when it ends.
    let descriptor: CInt
    /// The pipe that stops the thread: its read end is polled beside the socket. Written and
    /// closed under the lock, so that a stop never writes into a descriptor reused since.
    private let stopPipe: Mutex<(read: CInt, write: CInt)?>
    private let stopped = ListeningSignal()

    /// How long accepting waits after running out of descriptors (or memory for a socket).
    static let backoffMilliseconds: Int32 = 1_000

    private init(descriptor: CInt) throws {
        var ends: [CInt] = [0, 0]
        guard pipe(&ends) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw ListeningSocketError("pipe", path: "for the acceptor", code: code)
        }
        for end in ends { Self.setCloseOnExec(end) }
        self.descriptor = descriptor
        stopPipe = Mutex((ends[0], ends[1]))
    }

    /// A socket bound to `path` and listening, replacing a socket file there (as SwiftNIO's
    /// `cleanupExistingSocketFile` did; any other kind of file is left, and binding fails).
    static func bound(to path: String, backlog: Int32 = 256) throws -> SocketAcceptor {
        guard var address = unixSocketAddress(path) else {
            throw ListeningSocketError("the socket path \(path) is too long (at most 107 bytes)")
        }
        var status = stat()
        if lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ListeningSocketError("socket for", path: path, code: errno) }
        let bound = withSocketAddress(&address) { bind(fd, $0, $1) }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ListeningSocketError(bound == 0 ? "listen on" : "bind", path: path, code: code)
        }
        return try SocketAcceptor(descriptor: fd)
    }

    /// `descriptor`, a socket already bound and listening (systemd's, under socket activation),
    /// made non-blocking.
    static func adopting(_ descriptor: CInt) throws -> SocketAcceptor {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw ListeningSocketError("fcntl on the socket passed as descriptor", path: "\(descriptor)", code: errno)
        }
        return try SocketAcceptor(descriptor: descriptor)
    }

    /// Accepts connections on a thread of its own until ``stop()``, handing each new socket
    /// (non-blocking, close-on-exec; the receiver owns it) to `accepted`.
    func start(_ accepted: @escaping @Sendable (CInt) -> Void) {
        let thread = Thread { [self] in
            acceptUntilStopped(accepted)
            Glibc.close(descriptor)
            stopPipe.withLock { pipe in
                if let ends = pipe {
                    Glibc.close(ends.read)
                    Glibc.close(ends.write)
                }
                pipe = nil
            }
            stopped.finish(.success(()))
        }
        thread.name = "modeld-accept"
        thread.start()
    }

    /// Stops accepting; the socket is closed once the thread has seen it (``waitUntilStopped()``).
    func stop() {
        stopPipe.withLock { pipe in
            guard let ends = pipe else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(ends.write, &byte, 1)
        }
    }

    /// Returns once the accepting thread has ended and closed the socket.
    func waitUntilStopped() async {
        try? await stopped.wait()
    }

    private static func setCloseOnExec(_ descriptor: CInt) {
        _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
    }

    private func acceptUntilStopped(_ accepted: (CInt) -> Void) {
        // Only this thread closes the pipe, after this loop.
        guard let stopRead = stopPipe.withLock({ $0?.read }) else { return }
        while true {
            var polled = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&polled, 2, -1)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0, polled[1].revents == 0 else { return }
            acceptLoop: while true {
                // Glibc's module leaves `accept4` out (it is behind `_GNU_SOURCE`): two `fcntl`s.
                let fd = accept(descriptor, nil, nil)
                if fd >= 0 {
                    Self.setCloseOnExec(fd)
                    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                    accepted(fd)
                    continue
                }
                switch errno {
                case EAGAIN, EWOULDBLOCK:
                    break acceptLoop
                case EINTR, ECONNABORTED, EPROTO:
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    var waiting = [pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
                    if poll(&waiting, 1, Self.backoffMilliseconds) > 0 { return }
                    break acceptLoop
                default:
                    return
                }
            }
        }
    }
}
