#if canImport(Glibc)
    import Glibc
#endif
import NIOCore

/// Who is at the other end of a Unix-domain socket, as the kernel recorded it when the peer
/// connected (`SO_PEERCRED`): its user, group and process. A client cannot forge it.
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public let uid: UInt32
    public let gid: UInt32
    public let pid: Int32

    public init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }

    /// The caller of the call the current task serves: set by the framed transport around each
    /// call it runs, and by the daemon from the HTTP/2 transport's verified headers.
    @TaskLocal public static var current: PeerCredentials?

    /// The metadata keys the daemon puts the HTTP/2 caller's credentials under (after removing
    /// any a client sent).
    public static let uidKey = "modeld-peer-uid"
    public static let gidKey = "modeld-peer-gid"
    public static let pidKey = "modeld-peer-pid"

    /// A caller whose credentials could not be read: it is nobody (the overflow user).
    public static let unknown = PeerCredentials(uid: 65_534, gid: 65_534, pid: 0)

    public var description: String { "uid \(uid), gid \(gid), pid \(pid)" }

    /// The peer credentials of a Unix-domain socket channel; nil when it has none (another kind
    /// of socket).
    public static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials?> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return credentials.map { PeerCredentials(uid: $0.uid, gid: $0.gid, pid: $0.pid) }.recover { _ in nil }
    }

    /// The peer credentials of the Unix-domain socket `descriptor`; nil when it has none.
    static func of(descriptor: CInt) -> PeerCredentials? {
        var credentials = UCred()
        var size = socklen_t(MemoryLayout<UCred>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0 else { return nil }
        return PeerCredentials(uid: credentials.uid, gid: credentials.gid, pid: credentials.pid)
    }

    /// Linux's `struct ucred`, which Glibc's module leaves out (it is behind `_GNU_SOURCE`).
    private struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }
}
