import NIOCore
import PostgresNIO

/// The statements a reader's connection keeps prepared on the server, by their text, so that a
/// statement sent again is only bound and executed: PostgreSQL parses and plans it once per
/// connection rather than at every read, as `pgbench -M prepared` and every driver's statement
/// cache do. Only the reads sent from the calling task (``PostgresAsyncSession``) use it: each
/// runs outside a transaction, so one that fails because the prepared statement went stale can
/// be prepared and run again.
///
/// At most ``capacity`` statements; beyond, the least recently used is closed on the server.
/// A statement's parameter types are those PostgreSQL infers when preparing it (PostgresNIO's
/// `prepare(query:)` declares none): the statements that come here spell every value's type
/// (``PostgresDialect/placeholder(_:for:)`` casts, keys as `= ANY($1)` of a `bigint` column), so
/// the types inferred are those bound. A statement that leaves a parameter out of its text (a
/// compiled fetch binds a string it then compares folded) leaves PostgreSQL nothing to infer
/// that parameter's type from: it is run unprepared, as every statement was before, and
/// remembered as such (so is one PostgreSQL still finds a parameter's type missing in, 42P18).
// Every member is touched on the connection's event loop only (``rows(_:_:)`` checks it), so
// the mutable state needs no lock.
final class PreparedStatements: @unchecked Sendable {
    private struct Entry {
        /// Nil for a statement run unprepared.
        let statement: EventLoopFuture<PreparedQuery>?
        var lastUse: UInt64
    }

    let connection: PostgresConnection
    let capacity: Int
    private var entries: [String: Entry] = [:]
    private var uses: UInt64 = 0

    init(connection: PostgresConnection, capacity: Int = 64) {
        self.connection = connection
        self.capacity = capacity
    }

    /// How many statements are prepared or being prepared (on the event loop only).
    var count: Int { entries.count }

    /// The rows of `sql` run with `binds`, prepared first unless it is already. A statement the
    /// server no longer knows or can no longer run as prepared (a migration changed the types
    /// of the columns it returns) is prepared again, once.
    func rows(_ sql: String, _ binds: [PostgresData]) -> EventLoopFuture<[PostgresRow]> {
        connection.eventLoop.preconditionInEventLoop()
        guard let statement = prepared(sql, parameters: binds.count) else { return unprepared(sql, binds) }
        return statement.flatMap { $0.execute(binds) }.flatMapError { error in
            switch PostgresSession.sqlState(of: error) {
            case "26000", "0A000":
                // Stale: the server does not know it, or cannot run it as prepared.
                guard let again = self.preparedAgain(sql, parameters: binds.count, after: statement) else {
                    return self.unprepared(sql, binds)
                }
                return again.flatMap { $0.execute(binds) }
            case "42P18":
                // A parameter whose type PostgreSQL could not infer: run unprepared from now on.
                self.entries[sql] = Entry(statement: nil, lastUse: self.uses)
                return self.unprepared(sql, binds)
            default:
                return self.connection.eventLoop.makeFailedFuture(error)
            }
        }
    }

    /// The rows of `sql` run as an unnamed statement, each parameter's type declared.
    func unprepared(_ sql: String, _ binds: [PostgresData]) -> EventLoopFuture<[PostgresRow]> {
        var bindings = PostgresBindings(capacity: binds.count)
        for bind in binds { bindings.append(bind) }
        return connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: PostgresSession.logger)
            .map(\.rows)
    }

    /// `sql`'s prepared statement, prepared now when it is not (or failed to be); nil when it
    /// is run unprepared.
    private func prepared(_ sql: String, parameters: Int) -> EventLoopFuture<PreparedQuery>? {
        uses += 1
        // One look-up (one hash of the text) for a statement run again.
        if let index = entries.index(forKey: sql) {
            entries.values[index].lastUse = uses
            return entries.values[index].statement
        }
        if entries.count >= capacity, let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            forget(oldest.key, ifStill: oldest.value.statement)
        }
        guard Self.references(sql, parameters: parameters) else {
            entries[sql] = Entry(statement: nil, lastUse: uses)
            return nil
        }
        let statement = connection.prepare(query: sql)
        entries[sql] = Entry(statement: statement, lastUse: uses)
        // One that failed to prepare (bad SQL, a table not there yet) is not kept.
        statement.whenFailure { _ in self.forget(sql, ifStill: statement, close: false) }
        return statement
    }

    /// `sql` prepared anew, its stale `statement` forgotten.
    private func preparedAgain(_ sql: String, parameters: Int, after statement: EventLoopFuture<PreparedQuery>)
        -> EventLoopFuture<PreparedQuery>?
    {
        forget(sql, ifStill: statement)
        return prepared(sql, parameters: parameters)
    }

    /// Whether `sql` names each of its `parameters` ($1 … $N) at least once.
    static func references(_ sql: String, parameters: Int) -> Bool {
        guard parameters > 0 else { return true }
        var named = [Bool](repeating: false, count: parameters + 1)
        var number = -1
        for byte in sql.utf8 {
            if number >= 0, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                number = number * 10 + Int(byte - UInt8(ascii: "0"))
                continue
            }
            if number > 0, number <= parameters { named[number] = true }
            number = byte == UInt8(ascii: "$") ? 0 : -1
        }
        if number > 0, number <= parameters { named[number] = true }
        return !named.dropFirst().contains(false)
    }

    /// Drops `sql`'s entry if it is still `statement`, closing the statement on the server once
    /// prepared. Statements already sent to run on it are answered first (a connection runs its
    /// statements in order, and its executions were queued before this close).
    private func forget(_ sql: String, ifStill statement: EventLoopFuture<PreparedQuery>?, close: Bool = true) {
        guard let entry = entries[sql], entry.statement === statement else { return }
        entries[sql] = nil
        if close { statement?.whenSuccess { _ = $0.deallocate() } }
    }
}
