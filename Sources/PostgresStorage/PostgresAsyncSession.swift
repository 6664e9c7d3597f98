import Logging
import ModelCore
import NIOCore
import PostgresNIO

/// Statements on an open connection, sent and awaited from the calling task
/// (``PostgresConnectionQueue/runAsync(_:)``), bounded as ``PostgresSession``'s are
/// (`EventLoopFuture.bounded`). Reads only, each outside a transaction: every statement is kept
/// prepared on the connection (``PreparedStatements``); unless `prepares` is false, for the
/// statements of a streamed fetch, which run in a transaction (where a statement gone stale could
/// not be prepared again) and mostly once (a cursor's).
struct PostgresAsyncSession: Sendable {
    let statements: PreparedStatements
    let endpoint: PostgresEndpoint
    var prepares = true

    var connection: PostgresConnection { statements.connection }

    /// Runs `sql` with `binds` ($1, $2, …), `keys` first when given, and returns its rows.
    func query(_ sql: String, keys: [Int64]? = nil, _ binds: [Value] = []) async throws -> [PostgresRow] {
        var data: [PostgresData] = []
        data.reserveCapacity(binds.count + 1)
        if let keys { data.append(try PostgresValues.data(keys)) }
        for value in binds { data.append(try PostgresValues.data(value)) }
        let statements = statements, connection = connection, values = data, prepares = prepares
        let send: @Sendable () -> EventLoopFuture<[PostgresRow]> = {
            guard !connection.isClosed else {
                return connection.eventLoop.makeFailedFuture(PostgresSession.closed(endpoint))
            }
            let rows = prepares ? statements.rows(sql, values) : statements.unprepared(sql, values)
            return rows.bounded(
                by: PostgresSession.statementLimit, what: "a statement", closing: connection)
        }
        // On the connection's own loop (a read from a caller served there), at once.
        let rows = connection.eventLoop.inEventLoop ? send() : connection.eventLoop.flatSubmit(send)
        do {
            return try await rows.get()
        } catch {
            throw PostgresSession.error(error, endpoint: endpoint)
        }
    }
}
