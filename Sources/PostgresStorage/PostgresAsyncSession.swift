import Logging
import ModelCore
import NIOCore
import PostgresNIO

/// Statements on an open connection, sent and awaited from the calling task
/// (``PostgresConnectionQueue/runAsync(_:)``), bounded as ``PostgresSession``'s are: past
/// ``PostgresSession/statementLimit`` the connection is given up, and a statement whose
/// connection closed under it fails `unavailable` within a second.
struct PostgresAsyncSession: Sendable {
    let connection: PostgresConnection
    let endpoint: PostgresEndpoint

    /// Runs `sql` with `binds` ($1, $2, …), `keys` first when given, and returns its rows.
    func query(_ sql: String, keys: [Int64]? = nil, _ binds: [Value] = []) async throws -> [PostgresRow] {
        let statement = try PostgresSession.statement(sql, keys: keys, binds)
        let connection = connection, endpoint = endpoint
        do {
            return try await withCheckedThrowingContinuation { continuation in
                // Sent from the event loop: the one hand-off there is the one the write needs
                // anyway, and the watch's timer is set without waking the loop again.
                connection.eventLoop.execute {
                    let watch = StatementWatch(continuation: continuation, connection: connection, endpoint: endpoint)
                    // PostgresNIO never answers a statement written to a closed connection.
                    guard !connection.isClosed else { return watch.finish(.failure(PostgresSession.closed(endpoint))) }
                    watch.start(connection.query(statement, logger: PostgresSession.logger).map(\.rows))
                }
            }
        } catch {
            throw PostgresSession.error(error, endpoint: endpoint)
        }
    }
}

/// One statement's wait: answered once, by the statement, by its connection closing without an
/// answer, or by the limit (which closes the connection).
// Every member is touched on the connection's event loop only (`execute`, the future's
// callbacks and the scheduled checks all run there).
private final class StatementWatch: @unchecked Sendable {
    private var continuation: CheckedContinuation<[PostgresRow], any Error>?
    private let connection: PostgresConnection
    private let endpoint: PostgresEndpoint
    private var check: Scheduled<Void>?
    private var elapsed = TimeAmount.zero
    private var closedFor = TimeAmount.zero
    private static let interval = TimeAmount.milliseconds(250)

    init(
        continuation: CheckedContinuation<[PostgresRow], any Error>, connection: PostgresConnection,
        endpoint: PostgresEndpoint
    ) {
        self.continuation = continuation
        self.connection = connection
        self.endpoint = endpoint
    }

    func start(_ rows: EventLoopFuture<[PostgresRow]>) {
        rows.whenComplete { result in self.finish(result.mapError { $0 }) }
        if continuation != nil { schedule() }
    }

    func finish(_ result: Result<[PostgresRow], any Error>) {
        check?.cancel()
        check = nil
        continuation?.resume(with: result)
        continuation = nil
    }

    private func schedule() {
        check = connection.eventLoop.scheduleTask(in: Self.interval) { self.tick() }
    }

    private func tick() {
        guard continuation != nil else { return }
        elapsed = elapsed + Self.interval
        if elapsed >= TimeAmount(PostgresSession.statementLimit) {
            PostgresConnectionQueue.close(connection)
            return finish(
                .failure(
                    ModelError(
                        .unavailable,
                        "the PostgreSQL server did not answer a statement within \(PostgresSession.statementLimit); the connection is given up"
                    )))
        }
        // A statement whose connection closed fails within moments, or never.
        if connection.isClosed {
            closedFor = closedFor + Self.interval
            if closedFor > .milliseconds(500) {
                return finish(
                    .failure(
                        ModelError(
                            .unavailable,
                            "the connection to the PostgreSQL server closed before it answered a statement")))
            }
        }
        schedule()
    }
}
