#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore

/// A small file of the daemon's settings (JSON), replaced whole: written to `<file>.new`, synced,
/// and renamed over the file, so that a crash leaves the old file or the new one, never half of
/// one. Readable by the daemon's user only.
enum SettingsFile {
    /// Removes the file (nothing to keep); a missing one is not an error.
    static func remove(_ file: URL) throws {
        guard unlink(file.path) == 0 || errno == ENOENT else { throw failure(file) }
    }

    static func write(_ value: some Encodable, to file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = try encoder.encode(value)
        let temporary = file.path + ".new"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure(file) }
        let written = data.withUnsafeBytes { bytes in
            bytes.isEmpty ? 0 : Glibc.write(descriptor, bytes.baseAddress!, bytes.count) // ! non-empty
        }
        let synced = written == data.count && fsync(descriptor) == 0
        close(descriptor)
        guard synced, rename(temporary, file.path) == 0 else {
            let error = failure(file)
            unlink(temporary)
            throw error
        }
    }

    private static func failure(_ file: URL) -> ModelError {
        ModelError(.storageFailure, "cannot write \(file.path): \(String(cString: strerror(errno)))")
    }
}
