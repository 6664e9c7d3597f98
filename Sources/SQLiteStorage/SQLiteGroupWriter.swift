import CoreMetrics
import ModelCore
import ModelStorage

/// Group commit on SQLite's writer connection (``GroupCommit``): a group runs in one
/// `BEGIN IMMEDIATE` transaction, and one COMMIT (one sync of the WAL, `synchronous=FULL`)
/// makes all of its saves durable. A save running alone is interrupted as any other statement.
typealias SaveBatcher = GroupCommit<SQLiteGroupWriter>

extension GroupCommit where Writer == SQLiteGroupWriter {
    /// Group commit on `writer`, recording each group's size through swift-metrics (the daemon
    /// bootstraps it with its Prometheus registry; elsewhere it records nowhere).
    convenience init(writer: ConnectionQueue) {
        let groupSizes = Recorder(label: "modeld_group_commit_saves")
        self.init(writer: SQLiteGroupWriter(queue: writer)) { groupSizes.record($0) }
    }
}

/// The SQLite writer's transactions and savepoints, for ``GroupCommit``. A group of more than one
/// save remembers its sequences, schema check and history rows for its transaction
/// (``GroupMemo``), and writes them before it commits; a savepoint keeps a copy of the memo to go
/// back to when its save is undone.
struct SQLiteGroupWriter: GroupCommitWriter {
    let queue: ConnectionQueue

    func submit(_ body: @escaping @Sendable (Result<SQLiteConnection, any Error>) -> Void) {
        queue.submit(body)
    }

    func interrupt() { queue.interrupt() }

    func begin(_ connection: SQLiteConnection, alone: Bool) throws {
        try connection.beginWrite()
        // A save alone reads and writes each sequence once anyway.
        connection.groupMemo = alone ? nil : GroupMemo()
    }

    func savepoint(_ connection: SQLiteConnection) throws -> GroupMemo? {
        let before = connection.groupMemo?.copy()
        try connection.run("SAVEPOINT save")
        return before
    }

    func release(_ connection: SQLiteConnection) throws {
        try connection.run("RELEASE save")
    }

    func rollback(to memo: GroupMemo?, _ connection: SQLiteConnection) -> Bool {
        let undone =
            connection.isInTransaction && (try? connection.run("ROLLBACK TO save")) != nil
            && (try? connection.run("RELEASE save")) != nil
        if undone { connection.groupMemo = memo }
        return undone
    }

    func rollback(_ connection: SQLiteConnection) {
        if connection.isInTransaction { _ = try? connection.run("ROLLBACK") }
    }

    func commit(_ connection: SQLiteConnection) throws {
        if let memo = connection.groupMemo, !memo.history.isEmpty {
            try DeferredHistoryWriter.write(memo.history, connection)
            memo.history = DeferredHistory()
        }
        for (name, value) in connection.groupMemo?.takeWrites() ?? [] {
            try StoreMetadata.writeSequence(name, to: value, connection)
        }
        try connection.run("COMMIT")
    }

    func end(_ connection: SQLiteConnection) {
        connection.groupMemo = nil
    }
}
