import Foundation
import ModelCore
import ModelStorage

/// Where a PostgreSQL store lives, read from its URL: the server (a TCP host and port, or the
/// directory of its Unix socket), the role and database to connect as, and the PostgreSQL schema
/// (namespace) that holds the store's tables — one store per namespace.
///
/// - `postgres://user:password@host:5432/db?schema=trips`
/// - `postgres:///db?host=/run/postgresql&user=modeld&schema=trips` (a Unix socket: `host` is a
///   directory, as libpq's)
///
/// Without a password in the URL, `PGPASSWORD` gives it, as libpq's. `sslmode` (`disable`, `prefer`
/// — the default over TCP —, `require`, `verify-ca`, `verify-full`) and `sslrootcert` say how
/// connections over TCP use TLS, as libpq's do.
/// `schema` defaults to `modeld`; `user` to the process's user name; the port to 5432;
/// `pool_size`, the most connections the store reads through, to 4 (beside one for its saves and,
/// in the daemon, one that listens for other daemons' saves).
public struct PostgresEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The store's URL, as given.
    public let url: String
    /// The TCP host, or nil for a Unix socket.
    public var host: String?
    public var port: Int
    /// The directory of the server's Unix socket (`.s.PGSQL.<port>` inside), when not TCP.
    public var socketDirectory: String?
    public var user: String
    public var password: String?
    public var database: String
    /// The PostgreSQL schema holding the store.
    public var namespace: String
    /// The most connections the store reads through (`pool_size`).
    public var poolSize: Int
    /// Whether and how connections use TLS (`sslmode`, as libpq's).
    public var tlsMode: TLSMode
    /// The certificates a server's is checked against under `verify-ca` and `verify-full`
    /// (`sslrootcert`, a PEM file); the system's when not given.
    public var rootCertificates: String?

    /// libpq's `sslmode` values modeld takes (`allow` is left out: it tries without TLS first).
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Never TLS.
        case disable
        /// TLS when the server offers it, its certificate not checked (libpq's default over TCP).
        case prefer
        /// TLS or no connection; the certificate not checked.
        case require
        /// TLS, the certificate signed by `sslrootcert` (or the system's roots).
        case verifyCA = "verify-ca"
        /// As `verify-ca`, and the certificate names the host connected to.
        case verifyFull = "verify-full"
    }

    /// The most `pool_size` allows.
    static let maximumPoolSize = 64

    /// The longest PostgreSQL identifier (`NAMEDATALEN` − 1).
    static let maximumIdentifierLength = 63

    public init(location: StoreLocation) throws(ModelError) {
        try self.init(url: location.url)
    }

    public init(url: String) throws(ModelError) {
        func refuse(_ why: String) -> ModelError {
            ModelError(
                .invalidArgument,
                "'\(Self.redacted(url))' is not a PostgreSQL store URL: \(why); use postgres://user@host:port/database?schema=name or postgres:///database?host=/run/postgresql&schema=name",
                context: ["url": Self.redacted(url)])
        }
        self.url = url
        let lowercased = url.lowercased()
        let prefixed = lowercased.hasPrefix("postgres://") || lowercased.hasPrefix("postgresql://")
        guard let components = URLComponents(string: url) else {
            throw refuse(prefixed ? Self.unreadable(url) : "it does not start with postgres://")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql"
        else { throw refuse("it does not start with postgres://") }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard let value = item.value, !value.isEmpty else { throw refuse("'\(item.name)' has no value") }
            guard Self.parameters.contains(item.name) else {
                throw refuse(
                    "'\(item.name)' is not a parameter it takes (\(Self.parameters.joined(separator: ", ")))")
            }
            query[item.name] = value
        }
        let host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? query["host"]
        if let host, host.hasPrefix("/") {
            self.host = nil
            socketDirectory = host
        } else if let host {
            self.host = host
            socketDirectory = nil
        } else {
            throw refuse(
                "it names no server: give a host (postgres://host/db) or a socket directory (?host=/run/postgresql)")
        }
        if let text = query["port"] {
            guard let port = Int(text) else { throw refuse("the port '\(text)' is not a number") }
            self.port = port
        } else {
            port = components.port ?? 5432
        }
        guard (1...65535).contains(port) else { throw refuse("the port \(port) is out of range") }
        user =
            components.user.flatMap { $0.isEmpty ? nil : $0 } ?? query["user"]
            ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        // As libpq: without a password in the URL, PGPASSWORD's.
        password =
            components.password.map { $0.removingPercentEncoding ?? $0 } ?? query["password"]
            ?? ProcessInfo.processInfo.environment["PGPASSWORD"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !path.isEmpty, !path.contains("/") else {
            throw refuse("it names no database (postgres://host/database)")
        }
        database = path
        namespace = query["schema"] ?? "modeld"
        if let text = query["sslmode"] {
            guard let mode = TLSMode(rawValue: text) else {
                throw refuse(
                    "sslmode '\(text)' is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard self.host != nil || mode == .disable else {
                throw refuse("sslmode '\(text)' needs a TCP host: a Unix socket is never encrypted")
            }
            tlsMode = mode
        } else {
            // As libpq: TLS when offered over TCP; never over a Unix socket.
            tlsMode = self.host == nil ? .disable : .prefer
        }
        rootCertificates = query["sslrootcert"]
        if rootCertificates != nil, tlsMode != .verifyCA, tlsMode != .verifyFull {
            throw refuse("sslrootcert is for sslmode verify-ca or verify-full")
        }
        if let path = rootCertificates, !FileManager.default.isReadableFile(atPath: path) {
            throw refuse("sslrootcert '\(path)' is not a file the daemon can read (a PEM file on the daemon's host)")
        }
        if let text = query["pool_size"] {
            guard let size = Int(text), (1...Self.maximumPoolSize).contains(size) else {
                throw refuse("pool_size '\(text)' is not a number from 1 to \(Self.maximumPoolSize)")
            }
            poolSize = size
        } else {
            poolSize = 4
        }
        guard Self.isIdentifier(namespace) else {
            throw refuse(
                "the schema '\(namespace)' is not a name modeld uses for a store: 1 to 63 characters of a-z, 0-9 and _, starting with a letter"
            )
        }
        guard !Self.isReserved(namespace) else {
            throw refuse(
                "the schema '\(namespace)' is PostgreSQL's own: names starting with pg_ are reserved for its system schemas, and information_schema is its catalog; choose another"
            )
        }
    }

    /// The query parameters a URL may give.
    static let parameters = ["schema", "host", "port", "user", "password", "pool_size", "sslmode", "sslrootcert"]

    /// A lowercase PostgreSQL identifier that needs no quoting and no case folding.
    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, ("a"..."z").contains(first),
            name.utf8.count <= maximumIdentifierLength
        else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// A name PostgreSQL keeps for itself: `pg_…` (its system schemas; it refuses to create
    /// others, 42939) and `information_schema`.
    static func isReserved(_ namespace: String) -> Bool {
        namespace.hasPrefix("pg_") || namespace == "information_schema"
    }

    /// Why a URL that starts with `postgres://` is not one URLComponents reads: most often a port
    /// that is not a number (`host:abc`), which is said; otherwise that it is malformed.
    static func unreadable(_ url: String) -> String {
        guard let start = url.range(of: "://") else { return "it is not a well-formed URL" }
        let authority = url[start.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        // The host and port follow the last `@`; an IPv6 address is bracketed, the port after `]`.
        var server = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        if server.hasPrefix("["), let end = server.firstIndex(of: "]") { server = server[server.index(after: end)...] }
        if let colon = server.firstIndex(of: ":") {
            let port = server[server.index(after: colon)...]
            if !port.isEmpty, !port.allSatisfy({ $0.isASCII && $0.isNumber }) {
                return "the port '\(port)' is not a number"
            }
        }
        return "it is not a well-formed URL (are its special characters percent-encoded?)"
    }

    /// The URL without its password (see ``StoreLocation/redacted(_:)``). One URLComponents cannot
    /// read (a port that is not a number), which that leaves as it is, has its user part's
    /// password and its `password` parameter masked here (erring towards masking more).
    static func redacted(_ url: String) -> String {
        guard URLComponents(string: url) == nil else { return StoreLocation.redacted(url) }
        var text = url
        if let start = text.range(of: "://")?.upperBound {
            let end = text[start...].firstIndex { $0 == "?" || $0 == "#" } ?? text.endIndex
            if let at = text[start..<end].lastIndex(of: "@"), let colon = text[start..<at].firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        return text.replacing(/([?&]password=)[^&#]*/.ignoresCase()) { $0.output.1 + "***" }
    }

    /// ``url`` without its password: what messages, logs and store listings show.
    public var redactedURL: String { Self.redacted(url) }

    /// The `application_name` of the store's connections: `modeld <schema>`, as
    /// `pg_stat_activity` shows them.
    public var applicationName: String { "modeld \(namespace)" }

    /// What the store is, for messages: `postgres://host:port/db (schema trips)`, no password.
    public var description: String {
        let server = host.map { "\($0):\(port)" } ?? "\(socketDirectory ?? "")/.s.PGSQL.\(port)"
        return "postgres \(server)/\(database) (schema \(namespace))"
    }
}
