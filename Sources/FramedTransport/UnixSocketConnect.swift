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
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw .pathTooLong }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
    let fd = Glibc.socket(AF_UNIX, type, 0)
    guard fd >= 0 else { throw .socket(errno) }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard connected == 0 else {
        let code = errno
        Glibc.close(fd)
        throw .connect(code)
    }
    return fd
}
