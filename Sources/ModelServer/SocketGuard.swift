#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import ModelCore

/// Makes starting and stopping safe: one daemon per data directory and per socket (lock files),
/// a stale socket file replaced but a live one refused, a socket path checked for length before
/// NIO fails on it, and the socket's permissions set before anyone else can connect.
final class SocketGuard: Sendable {
    /// The longest socket path the kernel takes (`sun_path` is 108 bytes with its NUL): what
    /// ``isListening(_:)`` can reach.
    static let maximumPathLength = 107
    /// The longest socket path NIO binds (it keeps to 103 bytes, as macOS's `sun_path` would).
    static let maximumBoundPathLength = 103
    /// The longest socket path the daemon binds: the framed socket beside it, at the same path
    /// with `.frames` after it, must fit in ``maximumBoundPathLength`` too.
    static let maximumSocketPathLength = maximumBoundPathLength - ".frames".utf8.count

    let socketPath: String
    private let locks: [Int32]

    private init(socketPath: String, locks: [Int32]) {
        self.socketPath = socketPath
        self.locks = locks
    }

    /// Takes the data directory's lock (and, when binding a path, the socket's), and clears a
    /// stale socket file. Throws a `DaemonStartError` saying what is in the way.
    static func acquire(dataDirectory: String, socketPath: String, bindsPath: Bool) throws -> SocketGuard {
        try makeDirectory(dataDirectory, mode: 0o700, what: "data directory", option: "--data-dir (MODELD_DATA_DIR)")
        for directory in [dataDirectory, dataDirectory + "/stores"] {
            if let unsafe = unsafeReason(directory, stickyAllowed: false) {
                let remedy =
                    unsafe.isOthers
                    ? "give it to the daemon's user (chown \(geteuid()) \(directory))"
                    : "make it the daemon's user's alone (chmod 700 \(directory))"
                throw DaemonStartError(
                    "the data directory \(directory) is not safe to serve from: \(unsafe.reason), so \(unsafe.who) could rename or delete the stores in it; \(remedy) or choose another with --data-dir (MODELD_DATA_DIR)"
                )
            }
        }
        var locks: [Int32] = []
        do {
            locks.append(try lock(dataDirectory + "/modeld.lock", what: "data directory \(dataDirectory)"))
            if bindsPath {
                guard socketPath.utf8.count <= maximumSocketPathLength else {
                    throw DaemonStartError(
                        "the socket path \(socketPath) is \(socketPath.utf8.count) bytes long; the limit is \(maximumSocketPathLength) (the framed socket beside it, at the path with .frames after it, must fit in \(maximumBoundPathLength)): choose a shorter path"
                    )
                }
                let directory = (socketPath as NSString).deletingLastPathComponent
                // The fallback in /tmp (no XDG_RUNTIME_DIR) is the user's alone, as that would be.
                let isFallback = directory == "/tmp/modeld-\(geteuid())"
                try makeDirectory(
                    directory.isEmpty ? "." : directory, mode: isFallback ? 0o700 : 0o755, what: "socket's directory",
                    option: "--socket (MODELD_SOCKET)")
                try checkPrivate(directory.isEmpty ? "." : directory)
                locks.append(try lock(socketPath + ".lock", what: "socket \(socketPath)"))
                // Both sockets: the framed one beside it is bound too, and replaced if stale.
                try clearStaleSocket(socketPath)
                try clearStaleSocket(socketPath + ".frames")
            }
        } catch {
            for fd in locks { close(fd) }
            throw error
        }
        return SocketGuard(socketPath: socketPath, locks: locks)
    }

    /// Makes `path` and the directories above it that are missing (each with `mode`), or says
    /// in one line which one cannot be made and why, and which option chooses another.
    private static func makeDirectory(_ path: String, mode: mode_t, what: String, option: String) throws {
        func failure(_ reason: String) -> DaemonStartError {
            DaemonStartError("cannot make the \(what) \(path): \(reason); choose another with \(option)")
        }
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            var info = stat()
            if stat(prefix, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw failure(prefix.hasSuffix(path) ? "it is a file" : "\(prefix) is a file")
                }
                continue
            }
            guard mkdir(prefix, mode) == 0 || errno == EEXIST else {
                let reason = String(cString: strerror(errno))
                throw failure(prefix.hasSuffix(path) ? reason : "\(prefix): \(reason)")
            }
            // The mode as asked, whatever the umask took from it.
            chmod(prefix, mode)
        }
    }

    /// Refuses a socket's directory that another user could swap the socket in: one that is not
    /// the daemon's user's (or root's), or that others may write to without the sticky bit (as
    /// `/tmp` has). Such a directory is one someone else made first, at a path the daemon would
    /// have made (`/tmp/modeld-<uid>`, say), to serve clients a socket of their own.
    private static func checkPrivate(_ directory: String) throws {
        guard let unsafe = unsafeReason(directory, stickyAllowed: true) else { return }
        throw DaemonStartError(
            "the socket's directory \(directory) is not safe to serve in: \(unsafe.reason), so \(unsafe.who) could replace the socket; remove it (modeld makes it again, private) or choose another with --socket (MODELD_SOCKET)"
        )
    }

    /// Why another user could change what is in `directory`, or nil: it is not the daemon's
    /// user's (or root's: `isOthers`), or others may write to it (unless it has the sticky bit,
    /// as `/tmp` has, and `stickyAllowed`). Nil for a directory that is not there.
    private static func unsafeReason(_ directory: String, stickyAllowed: Bool) -> Unsafety? {
        var info = stat()
        guard stat(directory, &info) == 0 else { return nil }
        let user = geteuid()
        if info.st_uid != user && info.st_uid != 0 {
            return Unsafety(
                reason: "it belongs to uid \(info.st_uid), not to the daemon's user (uid \(user)) or root",
                isOthers: true)
        }
        guard info.st_mode & 0o022 != 0, !(stickyAllowed && info.st_mode & S_ISVTX != 0) else { return nil }
        return Unsafety(
            reason: "other users may write to it (mode \(String(info.st_mode & 0o777, radix: 8)))", isOthers: false)
    }

    /// Why a directory is not safe to serve from (``unsafeReason(_:stickyAllowed:)``).
    private struct Unsafety {
        let reason: String
        /// Whether it belongs to another user (the remedy is then a chown, not a chmod).
        let isOthers: Bool
        /// Who could change what is in it.
        var who: String { isOthers ? "that user" : "they" }
    }

    /// Sets the socket file's permissions.
    func setMode(_ mode: UInt16) throws {
        guard chmod(socketPath, mode_t(mode)) == 0 else {
            throw DaemonStartError(
                "cannot set the permissions of \(socketPath) to \(String(mode, radix: 8)): \(String(cString: strerror(errno)))"
            )
        }
    }

    /// Removes the socket file and releases the locks.
    func release(removeSocket: Bool) {
        if removeSocket { unlink(socketPath) }
        for fd in locks { close(fd) }
    }

    private static func lock(_ path: String, what: String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DaemonStartError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = read(fd, &buffer, buffer.count)
            let pid =
                count > 0
                ? String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                : "?"
            close(fd)
            throw DaemonStartError(
                "another modeld (pid \(pid)) is already using the \(what); stop it first or choose another",
                lockHolder: Int32(pid))
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        return fd
    }

    /// A socket file nobody listens on is left over from a daemon that died: remove it. One with
    /// a live listener belongs to another daemon (started with another data directory): refuse.
    private static func clearStaleSocket(_ path: String) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard (status.st_mode & S_IFMT) == S_IFSOCK else {
            throw DaemonStartError("\(path) exists and is not a socket; remove it or choose another socket path")
        }
        if isListening(path) {
            throw DaemonStartError(
                "a daemon is already listening on \(path); stop it first or choose another socket path")
        }
        guard unlink(path) == 0 else {
            throw DaemonStartError("cannot remove the stale socket \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Whether something accepts connections on the Unix socket at `path`.
    static func isListening(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(maximumPathLength))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }
}

/// Why the daemon could not start, in words an operator can act on.
public struct DaemonStartError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// For a data directory or socket another daemon holds: the process its lock file names, when
    /// it names one.
    public let lockHolder: Int32?

    init(_ description: String, lockHolder: Int32? = nil) {
        self.description = description
        self.lockHolder = lockHolder
    }
}
