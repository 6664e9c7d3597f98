import ModelCore
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
