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

    /// Removes `directory` when the process exits.
    static func removeAtExit(_ directory: URL) {
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
