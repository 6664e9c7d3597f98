import ModelCore
import ModelStorage
import NIOCore
import PostgresNIO

extension PostgresSession {
    /// The ModelError for a failed statement: the server's message, with UNAVAILABLE when the
    /// connection is gone.
    static func error(_ error: any Error, endpoint: PostgresEndpoint) -> ModelError {
        if let error = error as? ModelError { return error }
        let text = describe(error)
        switch sqlState(of: error) {
        case "23505":
            return ModelError(
                .uniqueConstraint, "a unique constraint would be violated (PostgreSQL: \(text))",
                context: ["store": endpoint.description, "sqlstate": "23505"])
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
        case let state? where state == "22021" || state == "22P05":
            // A value the client sent that PostgreSQL's text cannot hold: NUL, which SQLite keeps.
            return ModelError(
                .invalidArgument,
                "PostgreSQL cannot store this text: it holds the NUL character (U+0000) or one the database's encoding lacks; take it out, or keep such bytes in a data attribute (PostgreSQL: \(text))",
                context: ["store": endpoint.description, "sqlstate": state])
        case "3F000":
            // The namespace is gone: another daemon sharing the store dropped it.
            return ModelError(
                .notFound,
                "the store's PostgreSQL schema is gone from \(endpoint): it was dropped (by another daemon sharing it?) (PostgreSQL: \(text))",
                context: ["store": endpoint.description, "sqlstate": "3F000"])
        case "42P01" where text.contains("_modeld_"):
            // Its metadata tables are gone: the same.
            return ModelError(
                .notFound,
                "the store is gone from \(endpoint): it was dropped (by another daemon sharing it?) (PostgreSQL: \(text))",
                context: ["store": endpoint.description, "sqlstate": "42P01"])
        case "42P01":
            // A table of one of its entities is gone: the store was dropped by another daemon
            // (its namespace, out of the search path, leaves the tables unfound), or migrated.
            return ModelError(
                .notFound,
                "a table of the store is gone from \(endpoint): the store was dropped, or migrated, by another daemon sharing it; list the stores, or open it again (PostgreSQL: \(text))",
                context: ["store": endpoint.description, "sqlstate": "42P01"])
        case "42501":
            return insufficientPrivilege(text, endpoint: endpoint)
        case "40001", "40P01":
            return ModelError(
                .conflict, "another save changed the same objects at the same time; try again (PostgreSQL: \(text))",
                context: ["store": endpoint.description])
        default: break
        }
        if isConnectionLost(error) {
            return ModelError(
                .unavailable, "the PostgreSQL server of \(endpoint) closed the connection: \(text)",
                context: ["store": endpoint.description])
        }
        return ModelError(
            .storageFailure, "PostgreSQL (\(endpoint)): \(text)", context: ["store": endpoint.description])
    }

    /// The ModelError for a connection that could not be opened: `permissionDenied` when the
    /// server refused the login (no such role, a wrong or missing password, no `pg_hba.conf`
    /// entry: SQLSTATE 28000, 28P01) or the role may not connect to the database (42501);
    /// `notFound` when the database does not exist (3D000); otherwise `unavailable`, the server
    /// not reached (nothing listening, shutting down, starting), to be tried again.
    static func connectionError(_ error: any Error, endpoint: PostgresEndpoint) -> ModelError {
        let text = describe(error)
        let context = ["store": endpoint.description, "user": endpoint.user, "database": endpoint.database]
        let login = "check the URL's user and password (or the daemon's PGPASSWORD) and the server's pg_hba.conf"
        if let code = (error as? PSQLError)?.code, code == .authMechanismRequiresPassword || code == .saslError {
            let why =
                code == .authMechanismRequiresPassword
                ? "it asks for a password, and neither the URL nor PGPASSWORD gives one" : "authentication failed"
            return ModelError(
                .permissionDenied,
                "the PostgreSQL server of \(endpoint) refused to log in the role '\(endpoint.user)': \(why); \(login) (PostgreSQL: \(text))",
                context: context)
        }
        switch sqlState(of: error) {
        case let state? where state == "28000" || state == "28P01":
            return ModelError(
                .permissionDenied,
                "the PostgreSQL server of \(endpoint) refused to log in the role '\(endpoint.user)': \(login) (PostgreSQL: \(text))",
                context: context.merging(["sqlstate": state]) { $1 })
        case "3D000":
            return ModelError(
                .notFound,
                "the database '\(endpoint.database)' does not exist on the PostgreSQL server of \(endpoint): create it (CREATE DATABASE), or name another in the URL (PostgreSQL: \(text))",
                context: context.merging(["sqlstate": "3D000"]) { $1 })
        case "42501":
            return insufficientPrivilege(text, endpoint: endpoint)
        default:
            return ModelError(
                .unavailable, "cannot reach the PostgreSQL server of \(endpoint): \(text)",
                context: ["store": endpoint.description])
        }
    }

    /// A privilege the store's role lacks (42501): it needs `CONNECT` and `CREATE` on the
    /// database (the store makes its namespace and functions), and to own the namespace.
    static func insufficientPrivilege(_ text: String, endpoint: PostgresEndpoint) -> ModelError {
        ModelError(
            .permissionDenied,
            "the role '\(endpoint.user)' lacks a privilege the store needs in \(endpoint): the role needs CREATE on the database '\(endpoint.database)' (GRANT CREATE ON DATABASE \(SQL.quote(endpoint.database)) TO \(SQL.quote(endpoint.user))), as the store makes its schema and functions there, and to own the store's schema (PostgreSQL: \(text))",
            context: [
                "store": endpoint.description, "user": endpoint.user, "database": endpoint.database,
                "sqlstate": "42501",
            ])
    }

    /// Whether `error` says the connection is gone, as PostgresNIO reports it for a statement
    /// (`PSQLError`) or, in its older form, for a prepared one (``PreparedStatements``), which
    /// passes a broken socket's error on as it is.
    static func isConnectionLost(_ error: any Error) -> Bool {
        if let psql = error as? PSQLError {
            // Besides the closes: protocol breaks PostgresNIO closes the connection for (a server
            // shutting down mid-statement can send its error where the answer was expected).
            return [
                .serverClosedConnection, .connectionError, .clientClosedConnection, .unexpectedBackendMessage,
                .uncleanShutdown,
            ].contains(psql.code)
        }
        switch error {
        case PostgresError.connectionClosed, PostgresError.protocol: return true
        case is ChannelError, is IOError: return true
        default: return false
        }
    }

    /// The SQLSTATE of an error the server sent, from a statement or a prepared one.
    static func sqlState(of error: any Error) -> String? {
        if case PostgresError.server(let message) = error { return message.fields[.sqlState] }
        return (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// What the server said, or the client error's description.
    static func describe(_ error: any Error) -> String {
        if let psql = error as? PSQLError {
            if let message = psql.serverInfo?[.message] {
                let state = psql.serverInfo?[.sqlState].map { " (\($0))" } ?? ""
                return message + state
            }
            // A connection that failed below PostgreSQL (refused, TLS) says why in its underlying error.
            return psql.underlying.map { "\(psql.code): \($0)" } ?? "\(psql.code)"
        }
        if case PostgresError.server(let message) = error, let text = message.fields[.message] {
            return text + (message.fields[.sqlState].map { " (\($0))" } ?? "")
        }
        return "\(error)"
    }
}
