import CSQLite

/// The read transaction a reader connection keeps from one job to the next while no commit
/// comes: a point read then runs its one statement inside it, without beginning and ending a
/// transaction of its own. Beginning one takes the WAL's read lock (two `fcntl` calls, and the
/// mutex every connection of the process to the file shares, where the event loops' readers
/// waited on each other) and ending one gives it back: about 1,700 instructions of a 40,000
/// instruction point read, and the system calls and futex waits strace found under 16
/// clients' point reads.
///
/// A kept transaction reads the snapshot it began on, so it is kept only while that snapshot
/// is still the newest: each job first compares the WAL-index header it was kept on
/// (``SnapshotMark``) with the header now, which every commit, from any connection in any
/// process, rewrites. A job that finds it moved ends the kept transaction and begins a new one.
/// So a read sees every commit made before it began, as one in a transaction of its own does.
///
/// A kept transaction holds back checkpoints: the WAL cannot be copied into the file past its
/// snapshot, nor start over, while it is open. So a transaction is not kept once the WAL has
/// ``framesLimit`` frames that are not all in the file yet (then checkpoints, which SQLite runs
/// at every commit of so long a WAL, copy them as without keeping), and the reader's queue ends
/// one left unused for ``ConnectionQueue/keptReadIdleLimit``. One begun while every frame is in
/// the file reads the file alone, which keeps the next writer from nothing but copying its
/// frames: the kept transaction ends at the next job after that commit.
enum ReadHold {
    /// No transaction open.
    case none
    /// Kept from an earlier job, on this header, which was still the current one when the
    /// running job began.
    case kept(SnapshotMark)
    /// Begun by the running job, when the header was this one.
    case begun(SnapshotMark)

    /// The WAL's frames from which a reader keeps no transaction: SQLite's automatic checkpoint
    /// runs after a commit leaves the WAL at least this long (its default, which modeld keeps).
    static let framesLimit: UInt32 = 1_000
}

extension SQLiteConnection {
    /// At the start of a job: keeps the transaction kept from the last job if no commit came
    /// since, ends it otherwise; then, with none open, begins one (which the job's first
    /// statement gives its snapshot) unless the WAL is too long, and not yet copied into the
    /// file, to keep one.
    func startKeptRead() {
        switch readHold {
        case .kept(let mark):
            if SnapshotMark.current(self) == mark, isInTransaction { return }
            endRead()
        case .begun: endRead()
        case .none: break
        }
        // A transaction still open here (one whose end failed) would read an old snapshot.
        endOpenTransaction()
        guard !isInTransaction, let now = SnapshotMark.current(self),
            now.walFrames < ReadHold.framesLimit || now.isCheckpointed(self), (try? run("BEGIN")) != nil
        else { return }
        readHold = .begun(now)
    }

    /// At the end of a job: whether the transaction is kept for the next job. It is when the
    /// job succeeded and its transaction read a snapshot of the header it began on (no commit
    /// came between its beginning and now); otherwise it ends.
    func finishKeptRead(succeeded: Bool) -> Bool {
        let mark: SnapshotMark
        switch readHold {
        case .none: return false
        case .kept(let kept): mark = kept
        case .begun(let begun):
            guard SnapshotMark.current(self) == begun else {
                endRead()
                return false
            }
            mark = begun
        }
        // A transaction that read nothing has no snapshot yet: it would take a later one.
        guard succeeded, let handle, sqlite3_txn_state(handle, "main") == SQLITE_TXN_READ else {
            endRead()
            return false
        }
        readHold = .kept(mark)
        return true
    }

    /// Whether a transaction is kept for the next job.
    var keepsRead: Bool {
        if case .kept = readHold { return true }
        return false
    }

    /// Whether the running job reads in a transaction kept or begun for it, which a read that
    /// only reads needs no transaction (nor savepoint) of its own inside.
    var readsInHeldTransaction: Bool {
        if case .none = readHold { return false }
        return isInTransaction
    }

    /// Ends the transaction kept or begun, if one is.
    func endRead() {
        if case .none = readHold { return }
        readHold = .none
        endOpenTransaction()
    }

    /// Ends the open transaction, if any: it only read, so it commits, or else rolls back.
    private func endOpenTransaction() {
        guard isInTransaction else { return }
        if (try? run("COMMIT")) == nil { _ = try? run("ROLLBACK") }
    }
}
