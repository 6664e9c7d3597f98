#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Synchronization

/// Short temporary directories (a socket path must stay under 108 bytes), one per use.
public enum TemporaryDirectory {
    /// A new directory `/tmp/<prefix>-<8 hex digits>`, mode 0700.
    public static func make(prefix: String) throws -> URL {
        let url = URL(fileURLWithPath: "/tmp/\(prefix)-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }

    private static let atExit = Mutex<[String]>([])

    /// The file in a directory removed at exit that names the process it belongs to.
    static let ownerFile = ".owner-pid"

    /// Removes the directories `/tmp/<prefix>-<8 hex digits>` of this user that a process which
    /// has ended left behind (one that stopped without running its exit handlers: a trap, a
    /// kill), as ``removeAtExit(_:)`` names their owner. A directory whose owner still runs, or
    /// that names none, is left.
    public static func removeAbandoned(prefix: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where name.hasPrefix(prefix + "-") && name.count == prefix.count + 9 {
            let path = "/tmp/" + name
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(),
                let text = try? String(contentsOfFile: path + "/" + ownerFile, encoding: .utf8),
                let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
            else { continue }
            // Gone only when the kernel says there is no such process.
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Removes `directory` when the process exits, and names this process as its owner in it
    /// (``removeAbandoned(prefix:)``).
    static func removeAtExit(_ directory: URL) {
        try? "\(getpid())\n".write(
            to: directory.appendingPathComponent(ownerFile), atomically: true, encoding: .utf8)
        let first = atExit.withLock { paths in
            paths.append(directory.path)
            return paths.count == 1
        }
        if first {
            atexit {
                for path in TemporaryDirectory.atExit.withLock({ $0 }) {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
        }
    }
}
