import ModelCore
import ModelStorage

extension SQLiteStore {
    /// Limits how large the store file may grow (`PRAGMA max_page_count`); nil for no limit.
    /// A save that would go beyond fails with `resourceExhausted`, as on a full disk.
    public func setMaximumFileSize(_ bytes: Int64?) async throws {
        _ = try cachedLayout()
        try await writer.run { connection in
            let pageSize = try connection.scalarInt("PRAGMA page_size") ?? 4096
            let pages = bytes.map { max($0 / pageSize, 1) } ?? 1_073_741_823
            _ = try connection.scalarInt("PRAGMA max_page_count = \(pages)")
        }
    }

    /// SQLite's `PRAGMA integrity_check`: `["ok"]` for a sound file, otherwise the problems found.
    public func integrityCheck() async throws -> [String] {
        _ = try cachedLayout()
        return try await readers.run { connection in
            var lines: [String] = []
            try connection.query("PRAGMA integrity_check") { lines.append($0.text(0)) }
            return lines
        }
    }
}

extension SQLiteStore: StorageSizeLimiting {
    /// ``setMaximumFileSize(_:)``.
    public func setMaximumSize(_ bytes: Int64?) async throws {
        try await setMaximumFileSize(bytes)
    }
}
