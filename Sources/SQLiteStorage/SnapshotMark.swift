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
    /// The header's 48 bytes, as six words (a tuple of one type is laid out contiguously).
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

    /// The header now, as seen by `connection`'s file; nil when it cannot be read consistently.
    static func current(_ connection: SQLiteConnection) -> SnapshotMark? {
        guard let region = connection.walIndexRegion() else { return nil }
        var mark = SnapshotMark()
        let read = withUnsafeMutableBytes(of: &mark.words) { bytes in
            // ! a tuple of six words has an address.
            csqlite_wal_index_header_at(region, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return read == 1 ? mark : nil
    }

    /// Whether the WAL holds nothing the database file lacks: every frame of this header was
    /// copied into the file by a checkpoint (read from `connection`'s shared memory now).
    func isCheckpointed(_ connection: SQLiteConnection) -> Bool {
        guard let region = connection.walIndexRegion() else { return false }
        return csqlite_wal_backfilled_frames(region) >= walFrames
    }

    /// The frames in the WAL at this header (`mxFrame`, bytes 16-19, in the machine's order).
    var walFrames: UInt32 {
        #if _endian(little)
            UInt32(truncatingIfNeeded: words.2)
        #else
            UInt32(truncatingIfNeeded: words.2 >> 32)
        #endif
    }

    static func == (a: SnapshotMark, b: SnapshotMark) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
            && a.words.4 == b.words.4 && a.words.5 == b.words.5
    }
}

extension SQLiteConnection {
    /// Runs `start`, the first statement of a read transaction (which takes its snapshot),
    /// between two readings of the WAL-index header: the transaction's mark when both agree,
    /// nil when a commit came between them or the header could not be read.
    func markSnapshot(_ start: () throws -> Void) throws -> SnapshotMark? {
        precondition(isInTransaction, "a snapshot is marked inside the read transaction that takes it")
        // A transaction kept from an earlier job reads the snapshot it was kept on.
        if case .kept(let mark) = readHold {
            try start()
            return mark
        }
        let before = SnapshotMark.current(self)
        try start()
        guard let before, SnapshotMark.current(self) == before else { return nil }
        return before
    }
}
