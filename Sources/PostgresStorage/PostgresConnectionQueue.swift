import Dispatch
import Foundation
import Logging
import ModelCore
import ModelStorage
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// A connection to the server and the serial queue its work runs on. The work blocks on the
/// connection's futures, as the SQLite backend's work blocks on SQLite: so the save algorithm,
/// whose reads are synchronous, can run inside one transaction. The connection opens with the
/// first job; one that broke (the server restarted, say) is opened again by the next job.
// `connection` is touched only on `queue`.
final class PostgresConnectionQueue: @unchecked Sendable {
    private let queue: DispatchQueue
    private let endpoint: PostgresEndpoint
    private var connection: PostgresConnection?
    private static let logger = Logger(label: "modeld.postgres")
    private static let ids = Mutex<Int>(0)

    /// The namespace compiled queries name tables in (the store's, unless a staged migration's).
    private let searchPath: String

    init(endpoint: PostgresEndpoint, label: String, searchPath: String? = nil) {
        self.endpoint = endpoint
        self.searchPath = searchPath ?? endpoint.namespace
        self.queue = DispatchQueue(label: "modeld.postgres.\(label)")
    }

    /// Runs `body` with the connection on the queue.
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                let result = Result { try body(try self.session()) }
                // A connection the server cut (a restart, say) may not know it yet: the next job
                // opens a new one rather than write into it.
                if case .failure(let error as ModelError) = result, error.code == .unavailable,
                    let connection = self.connection
                {
                    self.connection = nil
                    Self.close(connection)
                }
                continuation.resume(with: result)
            }
        }
    }

    /// A queue dropped without ``close()`` (its store never closed) closes its connection.
    deinit {
        if let connection { Self.close(connection) }
    }

    /// Closes `connection` without waiting, keeping it until it is closed (PostgresNIO requires
    /// a connection to be closed before it goes).
    static func close(_ connection: PostgresConnection) {
        (connection.close() as EventLoopFuture<Void>).whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Closes the connection once the jobs queued before have run.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                if let connection = self.connection { _ = try? connection.close().wait() }
                self.connection = nil
                continuation.resume()
            }
        }
    }

    /// The open connection; a closed one is replaced. On the queue only.
    private func session() throws -> PostgresSession {
        if let connection, !connection.isClosed { return PostgresSession(connection: connection, endpoint: endpoint) }
        connection = nil
        do {
            let connecting = Self.connect(endpoint)
            let opened: PostgresConnection
            do {
                opened = try connecting.waitBounded(by: .seconds(10), what: "connecting")
            } catch {
                // Should it connect after all, it is closed rather than dropped open.
                connecting.whenSuccess { Self.close($0) }
                throw error
            }
            connection = opened
            let session = PostgresSession(connection: opened, endpoint: endpoint)
            // Compiled queries name the store's tables and functions without their namespace.
            try session.query("SET search_path TO \(SQL.quote(searchPath))")
            return session
        } catch {
            throw Self.unreachable(endpoint, error)
        }
    }

    /// Opens a connection to `endpoint`'s server.
    static func connect(_ endpoint: PostgresEndpoint) -> EventLoopFuture<PostgresConnection> {
        let configuration: PostgresConnection.Configuration
        if let host = endpoint.host {
            configuration = .init(
                host: host, port: endpoint.port, username: endpoint.user, password: endpoint.password,
                database: endpoint.database, tls: .disable)
        } else {
            configuration = .init(
                unixSocketPath: "\(endpoint.socketDirectory ?? "/run/postgresql")/.s.PGSQL.\(endpoint.port)",
                username: endpoint.user, password: endpoint.password, database: endpoint.database)
        }
        let id = ids.withLock { id in
            id += 1
            return id
        }
        return PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: id, logger: logger)
    }

    /// The error of a connection that could not be opened.
    static func unreachable(_ endpoint: PostgresEndpoint, _ error: any Error) -> ModelError {
        ModelError(
            .unavailable, "cannot reach the PostgreSQL server of \(endpoint): \(PostgresSession.describe(error))",
            context: ["store": endpoint.description])
    }
}

/// Statements on an open connection, each waited for.
struct PostgresSession {
    let connection: PostgresConnection
    let endpoint: PostgresEndpoint
    private static let logger = Logger(label: "modeld.postgres")

    /// Runs `sql` with `binds` ($1, $2, …) and returns its rows; `keys`, when given, is bound
    /// first, as a `bigint[]` ($1, for `= ANY($1)`).
    @discardableResult
    func query(_ sql: String, keys: [Int64]? = nil, _ binds: [Value] = []) throws -> [PostgresRow] {
        var bindings = PostgresBindings(capacity: binds.count + 1)
        if let keys { bindings.append(keys) }
        for value in binds { try PostgresValues.bind(value, into: &bindings) }
        do {
            return try connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: Self.logger)
                .waitBounded(by: Self.statementLimit, what: "a statement", closing: connection).rows
        } catch {
            throw PostgresSession.error(error, endpoint: endpoint)
        }
    }

    /// How long a statement may take before its connection is given up as lost: a server that
    /// went away without closing the connection would otherwise hold the store's queue for good.
    static let statementLimit = Duration.seconds(60)

    /// Runs `body` in a transaction (begun by `begin`): committed when it returns, rolled back
    /// when it throws.
    func transaction<T>(begin: String = "BEGIN", _ body: () throws -> T) throws -> T {
        try query(begin)
        do {
            let result = try body()
            try query("COMMIT")
            return result
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    /// The ModelError for a failed statement: the server's message, with UNAVAILABLE when the
    /// connection is gone.
    static func error(_ error: any Error, endpoint: PostgresEndpoint) -> ModelError {
        if let error = error as? ModelError { return error }
        let text = describe(error)
        switch (error as? PSQLError)?.serverInfo?[.sqlState] {
        case "23505":
            return ModelError(
                .uniqueConstraint, "a unique constraint would be violated (PostgreSQL: \(text))",
                context: ["store": endpoint.description])
        case "55P03":
            return ModelError(
                .unavailable,
                "the store is held by a schema change (a staged migration through another daemon?); try again once it is over (PostgreSQL: \(text))",
                context: ["store": endpoint.description])
        case let state? where state.hasPrefix("57P") || state.hasPrefix("08"):
            return ModelError(
                .unavailable,
                "the PostgreSQL server of \(endpoint) is shutting down, starting or unreachable; try again (PostgreSQL: \(text))",
                context: ["store": endpoint.description])
        case "40001", "40P01":
            return ModelError(
                .conflict, "another save changed the same objects at the same time; try again (PostgreSQL: \(text))",
                context: ["store": endpoint.description])
        default: break
        }
        if let psql = error as? PSQLError,
            psql.code == .serverClosedConnection || psql.code == .connectionError
                || psql.code == .clientClosedConnection
        {
            return ModelError(
                .unavailable, "the PostgreSQL server of \(endpoint) closed the connection: \(text)",
                context: ["store": endpoint.description])
        }
        return ModelError(
            .storageFailure, "PostgreSQL (\(endpoint)): \(text)", context: ["store": endpoint.description])
    }

    /// What the server said, or the client error's description.
    static func describe(_ error: any Error) -> String {
        if let psql = error as? PSQLError {
            if let message = psql.serverInfo?[.message] {
                let state = psql.serverInfo?[.sqlState].map { " (\($0))" } ?? ""
                return message + state
            }
            return "\(psql.code)"
        }
        return "\(error)"
    }
}

extension EventLoopFuture where Value: Sendable {
    /// The future's value, waited for at most `limit`: past it the connection (if given) is
    /// closed, which fails what it still has under way, and the wait fails `unavailable`.
    func waitBounded(by limit: Duration, what: String, closing connection: PostgresConnection? = nil) throws -> Value {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Value, any Error>?>(nil)
        whenComplete { result in
            outcome.withLock { $0 = result.mapError { $0 } }
            done.signal()
        }
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        if done.wait(timeout: .now() + seconds) == .timedOut {
            if let connection { PostgresConnectionQueue.close(connection) }
            throw ModelError(
                .unavailable, "the PostgreSQL server did not answer \(what) within \(limit); the connection is given up"
            )
        }
        // Completed: the result is set before the signal.
        return try outcome.withLock { $0! }.get()
    }
}
