import Foundation
import ModelCore

/// Where a store lives, parsed from its URL: `sqlite:///abs/path.sqlite` or `memory:name`.
public struct StoreLocation: Hashable, Sendable, CustomStringConvertible {
    /// The URL scheme, which chooses the backend (`sqlite`, `memory`).
    public let scheme: String
    /// For `sqlite`: the absolute file path. For `memory`: the store's name (may be empty).
    public let path: String

    public init(scheme: String, path: String) {
        self.scheme = scheme
        self.path = path
    }

    /// Parses a store URL strictly.
    public init(url: String) throws(ModelError) {
        guard let colon = url.firstIndex(of: ":") else {
            throw ModelError(.invalidArgument, "'\(url)' is not a store URL; use sqlite:///absolute/path.sqlite or memory:name")
        }
        let scheme = url[..<colon].lowercased()
        let rest = String(url[url.index(after: colon)...])
        switch scheme {
        case "sqlite":
            guard rest.hasPrefix("///") || (rest.hasPrefix("/") && !rest.hasPrefix("//")) else {
                throw ModelError(.invalidArgument, "'\(url)' needs an absolute path: sqlite:///absolute/path.sqlite")
            }
            let path = rest.hasPrefix("///") ? String(rest.dropFirst(2)) : rest
            let decoded = path.removingPercentEncoding ?? path
            guard !decoded.contains("\0"), decoded.count > 1, !decoded.hasSuffix("/") else {
                throw ModelError(.invalidArgument, "'\(url)' does not name a file")
            }
            self.init(scheme: "sqlite", path: decoded)
        case "memory":
            let name = rest.hasPrefix("//") ? String(rest.dropFirst(2)) : rest
            self.init(scheme: "memory", path: name)
        default:
            throw ModelError(.invalidArgument, "unknown store scheme '\(scheme)' in '\(url)'; use sqlite:///path or memory:name")
        }
    }

    /// The URL text: `sqlite:///abs/path.sqlite`, `memory:name`.
    public var url: String {
        scheme == "sqlite" ? "sqlite://\(path)" : "\(scheme):\(path)"
    }

    public var description: String { url }
}
