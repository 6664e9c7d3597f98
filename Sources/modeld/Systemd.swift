#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Synchronization
import Logging
import ModelWire
import ServiceLifecycle

/// What systemd passes a service: sockets (socket activation), where to send notifications,
/// the watchdog interval, and whether standard error goes to the journal.
struct SystemdEnvironment {
    /// The sockets passed (`LISTEN_FDS`, for this process by `LISTEN_PID`): descriptors 3, 4, …
    var listeningDescriptors: [Int32] = []
    /// `NOTIFY_SOCKET`: a path, or an abstract socket name starting with `@`.
    var notifySocket: String?
    /// Half of `WATCHDOG_USEC`, when the watchdog is on for this process.
    var watchdogInterval: Duration?
    /// Whether standard error is the journal's stream (`JOURNAL_STREAM` names its device and inode).
    var logsToJournal: Bool

    static let firstDescriptor: Int32 = 3

    init(environment: [String: String], processIdentifier: Int32 = getpid()) {
        if let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == processIdentifier,
            let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1
        {
            listeningDescriptors = (0..<Int32(min(count, 16))).map { Self.firstDescriptor + $0 }
        }
        notifySocket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        if let micros = environment["WATCHDOG_USEC"].flatMap(Int64.init), micros > 0,
            environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == processIdentifier }) ?? true
        {
            watchdogInterval = .microseconds(micros / 2)
        }
        logsToJournal = Self.isJournal(environment["JOURNAL_STREAM"])
    }

    /// The gRPC socket and the framed one among the sockets passed: the framed one is the one
    /// at `<gRPC socket's path>.frames`; the gRPC one is the first other.
    var activatedSockets: (grpc: Int32, framed: Int32?)? {
        let paths = listeningDescriptors.map { ($0, Self.socketPath(of: $0)) }
        guard
            let grpc = paths.first(where: { !($0.1?.hasSuffix(".frames") ?? false) }) ?? paths.first
        else { return nil }
        let framedPath = grpc.1.flatMap(DefaultLocations.framedSocketPath(for:))
        return (grpc.0, paths.first { $0.1 != nil && $0.1 == framedPath }?.0)
    }

    /// Forgets the variables a child process must not inherit.
    static func clearInherited() {
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] {
            unsetenv(name)
        }
    }

    private static func isJournal(_ stream: String?) -> Bool {
        guard let parts = stream?.split(separator: ":"), parts.count == 2,
            let device = UInt64(parts[0]), let inode = UInt64(parts[1])
        else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// The path of the Unix socket behind a descriptor, if it has one.
    static func socketPath(of descriptor: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        return withUnsafeBytes(of: address.sun_path) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// Sends sd_notify(3) messages (`READY=1`, `STATUS=…`, `WATCHDOG=1`, `STOPPING=1`) as datagrams
/// to `NOTIFY_SOCKET`.
final class SystemdNotifier: Sendable {
    let socketPath: String
    /// Whether `STOPPING=1` has gone out; no watchdog ping follows it.
    private let stopped = Mutex(false)

    init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// Sends a watchdog ping, unless `STOPPING=1` has gone out: the watchdog may have found the
    /// daemon serving just before shutdown began, and a ping sent after it would come last.
    func ping(_ message: String) {
        stopped.withLock { stopped in if !stopped { send(message) } }
    }

    /// Sends `STOPPING=1` (with `message`), after which pings are not sent. It is the one
    /// message that must not be dropped: while the queue is full (a reader slow under load, with
    /// pings waiting), it is tried again for up to a second.
    func stopping(_ message: String) {
        stopped.withLock { $0 = true }
        for _ in 0..<50 {
            if send("STOPPING=1\n" + message) { return }
            usleep(20_000)
        }
    }

    /// Sends one message; failures are ignored, as sd_notify's are. The send never waits: a
    /// notification socket nobody reads holds 10 messages (`net.unix.max_dgram_qlen`), and a
    /// blocking send would then hold the watchdog's thread, and shutdown with it, for good. A
    /// message that finds the queue full is dropped; the next ping follows.
    /// Returns whether the message went out.
    @discardableResult
    func send(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), $0, length)
            }
        }
        return sent == bytes.count
    }
}

/// Pings systemd's watchdog (`WATCHDOG=1`) at half its interval while the daemon serves, and
/// keeps `STATUS=` current.
struct WatchdogService: Service {
    let interval: Duration
    let notifier: SystemdNotifier
    let status: @Sendable () -> String?

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                var last: String?
                while true {
                    if let status = status() {
                        notifier.ping(status == last ? "WATCHDOG=1" : "WATCHDOG=1\nSTATUS=\(status)")
                        last = status
                    }
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            // Shutting down: the pings stop, and that is all.
        }
    }
}

/// Log lines for the journal: `<priority>label: message`, without the timestamp journald adds.
struct JournalLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let details =
            merged.isEmpty
            ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let line = "<\(Self.priority(event.level))>\(event.message)\(details)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// syslog priorities, as sd-daemon(3) lists them.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
