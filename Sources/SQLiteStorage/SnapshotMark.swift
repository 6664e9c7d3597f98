import CSQLite

/// Which committed state of the file a read transaction reads: the WAL-index header it began on.
///
/// SQLite (built here without `SQLITE_ENABLE_SNAPSHOT`) has no call that names a read
/// transaction's snapshot. But a reader's snapshot is the WAL-index header it finds in the
/// shared memory every connection to the file maps, in any process, and every commit writes a
/// new header: its frame count, running checksum and change counter all move, and a WAL that
/// starts over gets new salts. (`csqlite_wal_index_header`; the format is SQLite's documented,
/// stable WAL-index format.) So a transaction whose first statement ran while the header stayed
/// the same began on that header, and two transactions marked with equal headers read the same
/// rows. A mark that cannot be read (no shared memory mapped, a commit under way) is nil, and
/// nothing is assumed of that transaction.
struct SnapshotMark: Equatable, Sendable {
    private let words: [UInt64]

    private init(_ bytes: [UInt8]) {
        words = stride(from: 0, to: bytes.count, by: 8).map { start in
            bytes[start..<(start + 8)].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) }
        }
    }

    /// The header now, as seen by `connection`'s file; nil when it cannot be read consistently.
    static func current(_ connection: SQLiteConnection) -> SnapshotMark? {
        guard let handle = connection.handle else { return nil }
        var bytes = [UInt8](repeating: 0, count: 48)
        guard csqlite_wal_index_header(handle, &bytes) == 1 else { return nil }
        return SnapshotMark(bytes)
    }
}

extension SQLiteConnection {
    /// Runs `start`, the first statement of a read transaction (which takes its snapshot),
    /// between two readings of the WAL-index header: the transaction's mark when both agree,
    /// nil when a commit came between them or the header could not be read.
    func markSnapshot(_ start: () throws -> Void) throws -> SnapshotMark? {
        precondition(isInTransaction, "a snapshot is marked inside the read transaction that takes it")
        let before = SnapshotMark.current(self)
        try start()
        guard let before, SnapshotMark.current(self) == before else { return nil }
        return before
    }
}
