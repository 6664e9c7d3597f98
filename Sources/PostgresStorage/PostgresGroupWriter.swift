import CoreMetrics
import ModelCore
import ModelStorage
import PostgresNIO

/// The writer's session while a group of saves runs (``PostgresGroupWriter``): a new one when
/// the group's BEGIN finds the connection cut.
final class PostgresGroupSession {
    private(set) var session: PostgresSession
    /// Whether the connection was opened for an earlier job (and so may have been cut since).
    private var reused: Bool
    private let queue: PostgresConnectionQueue

    init(_ queue: PostgresConnectionQueue, session: PostgresSession, reused: Bool) {
        self.queue = queue
        self.session = session
        self.reused = reused
    }

    /// BEGIN, and a new memo for a group of more than one save; when the connection, opened for
    /// an earlier job, turns out to be cut (the server restarted since), BEGIN again on a new
    /// one: nothing reached the server, as ``PostgresConnectionQueue/run(_:)`` runs its job
    /// again. On the writer's queue.
    func begin(alone: Bool) throws {
        defer { session.memo = alone ? nil : GroupMemo() }
        do {
            try session.query("BEGIN")
        } catch let error as ModelError where error.code == .unavailable && reused {
            reused = false
            session = try queue.reopened(after: session.connection)
            try session.query("BEGIN")
        }
        reused = true
    }

    /// The memo a savepoint goes back to, and going back to it.
    var memo: GroupMemo? {
        get { session.memo }
        set { session.memo = newValue }
    }
}

/// The PostgreSQL writer's transactions and savepoints, for ``GroupCommit``: a group runs in one
/// transaction on the store's writer connection, and one COMMIT (one flush of the server's WAL)
/// makes all of its saves durable. A group of more than one save keeps a ``GroupMemo``: the
/// store's shared lock and schema check taken once, each key sequence read and written once.
/// PostgreSQL releases the locks a save undone to its savepoint took, so the memo goes back
/// with it. A save running on PostgreSQL is not interrupted: its statements are bounded
/// (``PostgresSession/statementLimit``), and it finishes or fails.
struct PostgresGroupWriter: GroupCommitWriter {
    let queue: PostgresConnectionQueue
    /// Where the memo's sequences are written back.
    let metadata: PostgresMetadata

    func submit(_ body: @escaping @Sendable (Result<PostgresGroupSession, any Error>) -> Void) {
        queue.submit { [queue] opened in
            body(opened.map { PostgresGroupSession(queue, session: $0.session, reused: $0.reused) })
        }
    }

    func interrupt() {}

    func begin(_ connection: PostgresGroupSession, alone: Bool) throws {
        try connection.begin(alone: alone)
    }

    /// Sent without waiting: should it fail, the save's next statement throws, and undoing to it
    /// fails. Keeps a copy of the memo to go back to.
    func savepoint(_ connection: PostgresGroupSession) throws -> GroupMemo? {
        let before = connection.memo?.copy()
        try connection.session.send("SAVEPOINT save")
        return before
    }

    /// Waited for: it throws the error of any statement of the save sent without waiting.
    func release(_ connection: PostgresGroupSession) throws {
        try connection.session.query("RELEASE save")
    }

    func rollback(to memo: GroupMemo?, _ connection: PostgresGroupSession) -> Bool {
        let undone =
            (try? connection.session.query("ROLLBACK TO save")) != nil
            && (try? connection.session.query("RELEASE save")) != nil
        if undone { connection.memo = memo }
        return undone
    }

    func rollback(_ connection: PostgresGroupSession) {
        _ = try? connection.session.query("ROLLBACK")
    }

    /// Writes back the sequences the group set and, when its saves took history tokens,
    /// notifies followers once, of the last (a follower reads all history after what it read
    /// last), then commits.
    func commit(_ connection: PostgresGroupSession) throws {
        // Sent without waiting: the COMMIT throws if one failed.
        for (name, value) in connection.memo?.takeWrites() ?? [] {
            try metadata.writeSequence(name, to: value, connection.session)
            if name == PostgresMetadata.historySequence { try metadata.notify(upTo: value, connection.session) }
        }
        try connection.session.query("COMMIT")
    }

    func end(_ connection: PostgresGroupSession) {
        connection.memo = nil
    }
}

extension GroupCommit where Writer == PostgresGroupWriter {
    /// Group commit on `writer`, recording each group's size through swift-metrics.
    convenience init(writer: PostgresConnectionQueue, metadata: PostgresMetadata) {
        let groupSizes = Recorder(label: "modeld_group_commit_saves")
        self.init(writer: PostgresGroupWriter(queue: writer, metadata: metadata)) { groupSizes.record($0) }
    }
}
