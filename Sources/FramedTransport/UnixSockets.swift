#if canImport(Glibc)
    import Glibc
#endif

/// Why a Unix socket could not be connected (``connectUnixSocket(to:nonBlocking:)``); each
/// client says it in its own terms.
enum UnixSocketConnectError: Error {
    /// The path does not fit in a `sockaddr_un`.
    case pathTooLong
    /// `socket` failed with this errno.
    case socket(Int32)
    /// `connect` failed with this errno (the socket was closed).
    case connect(Int32)
}

/// A stream socket connected to the Unix socket at `path`, close-on-exec; non-blocking when
/// asked (a daemon whose queue of connections to accept is full then refuses with EAGAIN
/// rather than making the caller wait). The caller owns the descriptor.
func connectUnixSocket(to path: String, nonBlocking: Bool) throws(UnixSocketConnectError) -> Int32 {
    guard var address = unixSocketAddress(path) else { throw .pathTooLong }
    var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
    let fd = Glibc.socket(AF_UNIX, type, 0)
    guard fd >= 0 else { throw .socket(errno) }
    guard withSocketAddress(&address, { Glibc.connect(fd, $0, $1) }) == 0 else {
        let code = errno
        Glibc.close(fd)
        throw .connect(code)
    }
    return fd
}

/// `path` as a Unix socket's address; nil when it does not fit in a `sockaddr_un`.
func unixSocketAddress(_ path: String) -> sockaddr_un? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    return address
}

/// Calls `body` with `address` as the `sockaddr` and length that `connect` and `bind` take.
func withSocketAddress<Result>(
    _ address: inout sockaddr_un, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
) -> Result {
    withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// Writes as much of `bytes` into the non-blocking `socket` as it takes at once: how many bytes
/// it took, and whether it then refused a write with an error (its peer closed it: EPIPE,
/// ECONNRESET). Never raises SIGPIPE.
func sendWhatFits(_ bytes: UnsafeRawBufferPointer, into socket: CInt) -> (written: Int, failed: Bool) {
    var written = 0
    while written < bytes.count {
        // `!`: not empty, or the loop would not run.
        let result = Glibc.send(socket, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
        if result > 0 {
            written += result
        } else if result < 0, errno == EINTR {
            continue
        } else if result < 0, errno == EAGAIN || errno == EWOULDBLOCK {
            break
        } else {
            return (written, true)
        }
    }
    return (written, false)
}
