import Logging
import ModelCore
import NIOCore
import PostgresNIO

/// Statements on an open connection, sent and awaited from the calling task
/// (``PostgresConnectionQueue/runAsync(_:)``), bounded as ``PostgresSession``'s are
/// (`EventLoopFuture.bounded`).
struct PostgresAsyncSession: Sendable {
    let connection: PostgresConnection
    let endpoint: PostgresEndpoint

    /// Runs `sql` with `binds` ($1, $2, …), `keys` first when given, and returns its rows.
    func query(_ sql: String, keys: [Int64]? = nil, _ binds: [Value] = []) async throws -> [PostgresRow] {
        let statement = try PostgresSession.statement(sql, keys: keys, binds)
        do {
            return try await PostgresSession.submit(statement, on: connection, endpoint: endpoint).get().rows
        } catch {
            throw PostgresSession.error(error, endpoint: endpoint)
        }
    }
}
