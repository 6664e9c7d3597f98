import Foundation
import ModelCore

/// Where a store lives, as a URL whose scheme chooses its backend: `sqlite:///abs/path.sqlite`,
/// `memory:name`, or any scheme a registered backend serves. The registry checks the scheme; the
/// backend of that scheme checks the rest (``StorageBackendFactory/location(parsing:)``).
public struct StoreLocation: Hashable, Sendable, CustomStringConvertible {
    /// The URL scheme, lowercased, which chooses the backend (`sqlite`, `memory`, …).
    public let scheme: String
    /// What the backend keeps of the rest: for `sqlite` the absolute file path, for `memory` the
    /// store's name (may be empty), for others what follows the scheme's colon.
    public let path: String
    /// The URL text.
    public let url: String

    /// The file the store is kept in: an SQLite store's absolute path; nil for every other backend
    /// (a PostgreSQL store's URL path starts with `/` too, and names no file).
    public var filePath: String? {
        scheme == "sqlite" && path.hasPrefix("/") ? path : nil
    }

    /// A location of `scheme` at `path`; its URL is `scheme://path` for an absolute path
    /// (`sqlite:///abs/path.sqlite`), `scheme:path` otherwise, unless `url` says.
    public init(scheme: String, path: String, url: String? = nil) {
        self.scheme = scheme
        self.path = path
        if let url {
            self.url = url
        } else {
            self.url = path.hasPrefix("/") && !path.hasPrefix("//") ? "\(scheme)://\(path)" : "\(scheme):\(path)"
        }
    }

    /// Splits a store URL into its scheme and the rest, checking only the scheme
    /// (`[a-z][a-z0-9+.-]*`, case-insensitive).
    public init(url: String) throws(ModelError) {
        let scheme = try Self.scheme(of: url)
        // scheme(of:) found the colon
        self.init(scheme: scheme, path: String(url[url.index(after: url.firstIndex(of: ":")!)...]), url: url)
    }

    /// The scheme of a store URL, lowercased.
    public static func scheme(of url: String) throws(ModelError) -> String {
        guard let colon = url.firstIndex(of: ":") else {
            throw ModelError(
                .invalidArgument,
                "'\(url)' is not a store URL; use sqlite:///absolute/path.sqlite, memory:name, or another backend's URL"
            )
        }
        let scheme = url[..<colon].lowercased()
        guard let first = scheme.unicodeScalars.first, ("a"..."z").contains(first),
            scheme.unicodeScalars.allSatisfy({
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+.-".unicodeScalars.contains($0)
            })
        else {
            throw ModelError(.invalidArgument, "'\(url)' does not start with a URL scheme (such as sqlite: or memory:)")
        }
        return scheme
    }

    /// The URL without a password: what messages, logs and store listings show.
    public var description: String { Self.redacted(url) }

    /// `url` with a password replaced by `***`, whether given before the host
    /// (`postgres://user:secret@host/db`) or as a `password` query parameter.
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        let inQuery = components.queryItems?.contains { $0.name.lowercased() == "password" } ?? false
        guard components.password != nil || inQuery else { return url }
        if components.password != nil { components.password = "***" }
        if inQuery {
            components.queryItems = components.queryItems?.map {
                $0.name.lowercased() == "password" ? URLQueryItem(name: $0.name, value: "***") : $0
            }
        }
        return components.string ?? url
    }

    /// Two locations are the same store when their scheme and path are: `sqlite:/a.sqlite` and
    /// `sqlite:///a.sqlite` name one file.
    public static func == (lhs: StoreLocation, rhs: StoreLocation) -> Bool {
        lhs.scheme == rhs.scheme && lhs.path == rhs.path
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(scheme)
        hasher.combine(path)
    }
}
