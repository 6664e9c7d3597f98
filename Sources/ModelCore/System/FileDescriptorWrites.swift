#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// Writing to a file descriptor, for the daemon's settings files and restores and modelctl's
/// backups alike.
package enum FileDescriptorWrites {
    /// Writes all of `data` to `descriptor` (again after a short write or an interruption);
    /// returns errno if a write fails.
    package static func writeAll(_ data: Data, to descriptor: Int32) -> Int32? {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset) // ! non-empty
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
    }
}
