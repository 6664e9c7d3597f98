#if canImport(Glibc)
    import Glibc
#endif
import Dispatch
import Foundation
import Synchronization

/// A client socket on a Unix socket path with nothing on top: for tests that play a broken or
/// hostile client (one that stops reading, sends half a request, or only connects). Blocking
/// waits run on a thread of their own.
public final class RawSocket: Sendable {
    public let descriptor: Int32
    /// Whether ``close()`` closed the descriptor: a second close would close whatever the
    /// process opened since under the same number (another test's socket, run beside this one).
    private let closed = Atomic(false)

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Connects to `path`; throws with errno's text when the connection is refused outright.
    /// `nonBlocking` fails at once when the listener's backlog is full, where a blocking connect
    /// would wait for room.
    public static func connect(_ path: String, nonBlocking: Bool = false) throws -> RawSocket {
        let flags =
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let fd = socket(AF_UNIX, flags, 0)
        guard fd >= 0 else { throw RawSocketError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(fd)
            throw RawSocketError("the path \(path) is too long for a Unix socket")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            throw RawSocketError("connect \(path): \(why)")
        }
        if nonBlocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        return RawSocket(descriptor: fd)
    }

    /// Writes all of `bytes` (blocking while the peer's buffer is full).
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw RawSocketError("send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// What reading found: bytes, the peer's close (EOF or a reset), or nothing within the time.
    public enum ReadResult: Equatable, Sendable {
        case bytes([UInt8])
        case closed
        case timedOut
    }

    /// Reads what arrives within `timeout` (up to `maximum` bytes).
    public func read(maximum: Int = 65_536, timeout: Duration) async -> ReadResult {
        await Self.offThread { [descriptor] in
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(
                &poller, 1,
                Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
            guard ready > 0 else { return .timedOut }
            var buffer = [UInt8](repeating: 0, count: maximum)
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return .closed }
            return .bytes(Array(buffer.prefix(count)))
        }
    }

    /// Reads until `count` bytes have arrived, the peer closes, or `timeout` passes.
    public func read(exactly count: Int, timeout: Duration) async -> ReadResult {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        while received.count < count {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .timedOut }
            switch await read(maximum: count - received.count, timeout: left) {
            case .bytes(let bytes): received += bytes
            case .closed: return .closed
            case .timedOut: return .timedOut
            }
        }
        return .bytes(received)
    }

    /// Reads and discards until the peer closes the connection; false if it is still open after
    /// `timeout`.
    public func waitUntilClosed(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            switch await read(timeout: left) {
            case .closed: return true
            case .timedOut: return false
            case .bytes: continue
            }
        }
    }

    /// Closes the descriptor, once however often it is called.
    public func close() {
        guard closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        Glibc.close(descriptor)
    }

    /// Ends the connection both ways without closing the descriptor: a read waiting on another
    /// thread wakes (it sees the end), and the descriptor cannot be reused under it.
    public func shutdown() {
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
    }

    /// Ends the connection's sending side (`shutdown(SHUT_WR)`): the peer reads the end of
    /// its input, and may still answer.
    public func shutdownSending() {
        _ = Glibc.shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Runs a blocking `body` on a thread of its own: not on Swift's cooperative threads, nor on
    /// Dispatch's global queues, whose few threads a test's long reads would take from everyone
    /// else in the process.
    private static func offThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}

/// A raw socket call failed.
public struct RawSocketError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Facts about a running process, read from /proc: for tests that check what a daemon holds.
public enum ProcessFacts {
    /// Resident memory in bytes that the process holds itself (RssAnon: not the pages of files
    /// it maps, such as SQLite's memory-mapped reads, which belong to the page cache), or nil
    /// when the process is gone.
    public static func residentBytes(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kilobytes = Int(fields[1]) { return kilobytes * 1024 }
        }
        return nil
    }

    /// CPU time used so far (user and system), or nil when the process is gone.
    public static func cpuTime(of pid: Int32) -> Duration? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        return .milliseconds((user + system) * 1000 / max(ticks, 1))
    }

    /// How many file descriptors the process has open.
    public static func openDescriptors(of pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }
}
