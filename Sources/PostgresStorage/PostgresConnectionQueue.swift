import Dispatch
import Foundation
import Logging
import ModelCore
import ModelStorage
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

/// A connection to the server and the serial queue its work runs on. The work blocks on the
/// connection's futures, as the SQLite backend's work blocks on SQLite: so the save algorithm,
/// whose reads are synchronous, can run inside one transaction. The connection opens with the
/// first job; one that broke (the server restarted, say) is opened again by the next job. Reads
/// of a statement or a few may instead be sent from the calling task (``runAsync(_:)``).
final class PostgresConnectionQueue: Sendable {
    private let queue: DispatchQueue
    private let endpoint: PostgresEndpoint
    /// The event loop the connection is opened on (and so reads and writes on).
    let eventLoop: any EventLoop
    /// The open connection and the statements prepared on it: replaced on `queue`, read there
    /// and by ``runAsync(_:)``, whose caller has the queue to itself (the pool hands it out to
    /// one job at a time).
    private let current = Mutex<PreparedStatements?>(nil)
    private var connection: PostgresConnection? {
        get { current.withLock { $0?.connection } }
        set { current.withLock { $0 = newValue.map { PreparedStatements(connection: $0) } } }
    }
    private static let logger = Logger(label: "modeld.postgres")
    private static let ids = Mutex<Int>(0)

    /// The namespace compiled queries name tables in (the store's, unless a staged migration's).
    private let searchPath: String

    init(
        endpoint: PostgresEndpoint, label: String, searchPath: String? = nil,
        eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    ) {
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.searchPath = searchPath ?? endpoint.namespace
        self.queue = DispatchQueue(label: "modeld.postgres.\(label)")
    }

    /// Runs `body` with the connection on the queue. When a connection opened for an earlier job
    /// turns out to be cut (the server restarted since) before `body` sent it anything but
    /// `BEGIN` or `SET`, `body` runs again on a new one: nothing reached the server, and the
    /// caller need not hear of a restart that is over.
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                var attempt = self.attempt(body)
                if attempt.mayRetry { attempt = self.attempt(body) }
                continuation.resume(with: attempt.result)
            }
        }
    }

    /// Runs `body` with the connection from the calling task: its statements are sent and
    /// awaited on the connection's event loop, with no thread of the queue's woken (two thread
    /// hand-offs a statement fewer; see docs/performance.md). For reads only, whose caller has
    /// the queue to itself: a read that failed `unavailable` on a connection opened for an
    /// earlier job runs again once on a new one (a read changes nothing, so it may), unless
    /// `mayRetry` says no (a stream that handed batches on).
    func runAsync<T: Sendable>(
        mayRetry: () -> Bool = { true }, _ body: (PostgresAsyncSession) async throws -> T
    ) async throws -> T {
        let (session, reused) = try await asyncSession()
        do {
            return try await body(session)
        } catch let error as ModelError where error.code == .unavailable {
            drop(session.connection)
            guard reused, mayRetry() else { throw error }
            return try await body(try await asyncSession().session)
        }
    }

    /// The open connection, opened on the queue when there is none; and whether it was open.
    private func asyncSession() async throws -> (session: PostgresAsyncSession, reused: Bool) {
        if let open = current.withLock({ $0 }), !open.connection.isClosed {
            return (PostgresAsyncSession(statements: open, endpoint: endpoint), true)
        }
        let opened = try await run { $0.connection }
        let statements = current.withLock { $0?.connection === opened ? $0 : nil }
        return (
            PostgresAsyncSession(statements: statements ?? PreparedStatements(connection: opened), endpoint: endpoint),
            false
        )
    }

    /// One run of `body`; `mayRetry` when it failed on a cut connection opened earlier, having
    /// sent no work. On the queue only.
    private func attempt<T>(_ body: (PostgresSession) throws -> T) -> (result: Result<T, any Error>, mayRetry: Bool) {
        let reused = hasOpenConnection
        let work = SessionWork()
        let result = Result { try body(try self.session(work)) }
        guard case .failure(let error as ModelError) = result, error.code == .unavailable, let connection else {
            return (result, false)
        }
        drop(connection)
        return (result, reused && !work.sent.load(ordering: .relaxed))
    }

    /// Runs `body` on the queue without waiting for it, with a session on the connection (or the
    /// error opening one) and whether that connection was opened for an earlier job: for
    /// ``GroupCommit``'s jobs, which track their own work (``PostgresGroupSession``).
    func submit(_ body: @escaping @Sendable (Result<(session: PostgresSession, reused: Bool), any Error>) -> Void) {
        queue.async {
            let reused = self.hasOpenConnection
            body(Result { (try self.session(SessionWork()), reused) })
        }
    }

    /// A session on a new connection, `cut` dropped. On the queue only.
    func reopened(after cut: PostgresConnection) throws -> PostgresSession {
        drop(cut)
        return try session(SessionWork())
    }

    /// Whether the queue has a connection open (the server may have cut it since, unknown yet).
    private var hasOpenConnection: Bool { connection.map { !$0.isClosed } ?? false }

    /// Forgets `cut`, if it is still the queue's connection, and closes it. A connection the
    /// server cut (a restart, say) may not know it yet: the next job opens a new one rather
    /// than write into it.
    private func drop(_ cut: PostgresConnection) {
        current.withLock { if $0?.connection === cut { $0 = nil } }
        Self.close(cut)
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
    private func session(_ work: SessionWork) throws -> PostgresSession {
        if let connection, !connection.isClosed {
            return PostgresSession(connection: connection, endpoint: endpoint, work: work)
        }
        connection = nil
        do {
            let connecting = Self.connect(endpoint, on: eventLoop)
            let opened: PostgresConnection
            do {
                opened = try connecting.bounded(by: .seconds(10), what: "connecting").wait()
            } catch {
                // Should it connect after all, it is closed rather than dropped open.
                connecting.whenSuccess { Self.close($0) }
                throw error
            }
            connection = opened
            let session = PostgresSession(connection: opened, endpoint: endpoint, work: work)
            // Compiled queries name the store's tables and functions without their namespace.
            try session.query("SET search_path TO \(SQL.quote(searchPath))")
            return session
        } catch {
            throw PostgresSession.connectionError(error, endpoint: endpoint)
        }
    }

    /// Opens a connection to `endpoint`'s server, on `eventLoop`.
    static func connect(
        _ endpoint: PostgresEndpoint, on eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    ) -> EventLoopFuture<PostgresConnection> {
        var configuration: PostgresConnection.Configuration
        if let host = endpoint.host {
            let tls: PostgresConnection.Configuration.TLS
            do {
                tls = try Self.tls(endpoint)
            } catch {
                return eventLoop.makeFailedFuture(error)
            }
            configuration = .init(
                host: host, port: endpoint.port, username: endpoint.user, password: endpoint.password,
                database: endpoint.database, tls: tls)
        } else {
            configuration = .init(
                unixSocketPath: "\(endpoint.socketDirectory ?? "/run/postgresql")/.s.PGSQL.\(endpoint.port)",
                username: endpoint.user, password: endpoint.password, database: endpoint.database)
        }
        // What pg_stat_activity shows of the connection: the store it serves.
        configuration.options.additionalStartupParameters = [("application_name", endpoint.applicationName)]
        let id = ids.withLock { id in
            id += 1
            return id
        }
        return PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger)
    }

    /// The TLS of a connection over TCP, as `sslmode` and `sslrootcert` say.
    static func tls(_ endpoint: PostgresEndpoint) throws -> PostgresConnection.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch endpoint.tlsMode {
        case .disable: return .disable
        case .prefer, .require: configuration.certificateVerification = .none
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        if let roots = endpoint.rootCertificates { configuration.trustRoots = .file(roots) }
        let context = try NIOSSLContext(configuration: configuration)
        return endpoint.tlsMode == .prefer ? .prefer(context) : .require(context)
    }
}

/// Statements on an open connection, each waited for.
struct PostgresSession {
    let connection: PostgresConnection
    let endpoint: PostgresEndpoint
    /// Records whether the session sent work (see ``PostgresConnectionQueue/run(_:)``).
    var work = SessionWork()
    /// What the saves of a group remember in its transaction (``PostgresGroupWriter``).
    var memo: GroupMemo?
    static let logger = Logger(label: "modeld.postgres")

    /// Runs `sql` with `binds` ($1, $2, …) and returns its rows; `keys`, when given, is bound
    /// first, as a `bigint[]` ($1, for `= ANY($1)`).
    @discardableResult
    func query(_ sql: String, keys: [Int64]? = nil, _ binds: [Value] = []) throws -> [PostgresRow] {
        let statement = try Self.statement(sql, keys: keys, binds)
        if !sql.hasPrefix("BEGIN"), !sql.hasPrefix("SET ") { work.sent.store(true, ordering: .relaxed) }
        return try PendingStatement(
            future: Self.submit(statement, on: connection, endpoint: endpoint, after: work), session: self
        ).rows()
    }

    /// Sends `sql` without waiting for its answer (a round trip of the server's, but no thread
    /// woken for it): the connection answers statements in order, so the next one waited for
    /// waits for this one too, and throws this one's error if it failed (the first such error:
    /// after it, the server refuses the transaction's statements).
    @discardableResult
    func send(_ sql: String, keys: [Int64]? = nil, _ binds: [Value] = []) throws -> PendingStatement {
        let statement = try Self.statement(sql, keys: keys, binds)
        work.sent.store(true, ordering: .relaxed)
        let work = work
        let future = Self.submit(statement, on: connection, endpoint: endpoint, after: work) { sent in
            sent.whenFailure { error in work.unthrown.withLock { $0 = $0 ?? error } }
        }
        return PendingStatement(future: future, session: self)
    }

    /// `statement`, sent from `connection`'s event loop (the one hand-off there is the one the
    /// write needs anyway, and the bound's timer is set without waking the loop again) and
    /// bounded (``statementLimit``); `sent` sees it as sent, before it is bounded. PostgresNIO never
    /// answers a statement written to a closed connection: one is refused at once. With `work`
    /// (a session's), the bound counts from when the session's statement before answered (the
    /// connection answers in order), so that a save's many pipelined statements are each given
    /// the limit, not all of them together.
    static func submit(
        _ statement: PostgresQuery, on connection: PostgresConnection, endpoint: PostgresEndpoint,
        after work: SessionWork? = nil,
        sent: @escaping @Sendable (EventLoopFuture<PostgresQueryResult>) -> Void = { _ in }
    ) -> EventLoopFuture<PostgresQueryResult> {
        let send: @Sendable () -> EventLoopFuture<PostgresQueryResult> = {
            guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(closed(endpoint)) }
            let query = connection.query(statement, logger: logger)
            sent(query)
            // On the connection's loop: the session's statements are chained in the order sent.
            let previous = work?.lastStatement.withLock { $0 }
            let bounded = query.bounded(by: statementLimit, what: "a statement", closing: connection, after: previous)
            work?.lastStatement.withLock { $0 = bounded.map { _ in } }
            return bounded
        }
        // On the connection's own loop (a read from a caller served there), at once.
        return connection.eventLoop.inEventLoop ? send() : connection.eventLoop.flatSubmit(send)
    }

    /// `sql` with its binds: `keys` first (as `bigint[]`), then `binds`.
    static func statement(_ sql: String, keys: [Int64]?, _ binds: [Value]) throws -> PostgresQuery {
        var bindings = PostgresBindings(capacity: binds.count + 1)
        if let keys { bindings.append(keys) }
        for value in binds { try PostgresValues.bind(value, into: &bindings) }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    /// The error of a statement about to go to a connection that closed.
    static func closed(_ endpoint: PostgresEndpoint) -> ModelError {
        ModelError(
            .unavailable,
            "the connection to the PostgreSQL server of \(endpoint) closed (did the server restart?); try again",
            context: ["store": endpoint.description])
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
}

/// Whether a session sent a statement other than `BEGIN…` or `SET …`: one that may have changed
/// something, so that a job failing after it is not run again. And the first error of a
/// statement sent without waiting (``PostgresSession/send(_:keys:_:)``) not thrown yet.
final class SessionWork: Sendable {
    let sent = Atomic<Bool>(false)
    let unthrown = Mutex<(any Error)?>(nil)
    /// The bounded answer of the last statement sent (``PostgresSession/submit(_:on:endpoint:after:sent:)``).
    let lastStatement = Mutex<EventLoopFuture<Void>?>(nil)
}

/// A statement sent, answered or to be.
struct PendingStatement {
    let future: EventLoopFuture<PostgresQueryResult>
    let session: PostgresSession

    /// Its rows, waited for if need be (the future is bounded); the error of an earlier
    /// statement sent without waiting comes first.
    func rows() throws -> [PostgresRow] {
        let outcome = Result { try future.wait().rows }
        // Answered in order: an earlier statement's failure was noted before this one's answer.
        if let earlier = session.work.unthrown.withLock({ error in
            defer { error = nil }
            return error
        }) {
            throw PostgresSession.error(earlier, endpoint: session.endpoint)
        }
        return try outcome.mapError { PostgresSession.error($0, endpoint: session.endpoint) }.get()
    }
}
