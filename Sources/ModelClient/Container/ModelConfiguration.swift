import ModelCore
import ModelWire

/// Where a container's store is: a store of a running `modeld`, or a store this process opens
/// itself. The same models, contexts and fetches work on either.
///
/// - `unix:///run/modeld/modeld.sock?store=trips`: the store `trips` of the daemon listening
///   on that socket (created if the daemon has no such store).
/// - `sqlite:///path/to/trips.sqlite` (or a `file:` URL): a SQLite file opened in-process, which
///   may be a daemon's store file too (`modelctl store info` shows its path).
/// - `memory:` or `memory:name` (a store of the container's own, gone when it closes; the
///   name is a label, not shared: two containers on `memory:x` are two stores).
public struct ModelConfiguration: Hashable, Sendable {
    public var url: URL

    public init(url: URL) {
        self.url = url
    }

    /// An in-memory store of its own, or the default daemon's `default` store.
    public init(isStoredInMemoryOnly: Bool = false) {
        url = isStoredInMemoryOnly ? URL(string: "memory:")! : Self.daemonURL(socketPath: nil, store: "default")
    }

    /// The store `store` of the daemon at `socketPath` (by default where `modelctl` looks: the
    /// user's daemon, or the system's).
    public static func daemon(socketPath: String? = nil, store: String = "default") -> ModelConfiguration {
        ModelConfiguration(url: daemonURL(socketPath: socketPath, store: store))
    }

    static func daemonURL(socketPath: String?, store: String) -> URL {
        let path =
            socketPath
            ?? DefaultLocations.clientSocketPath(
                environment: ProcessInfo.processInfo.environment, userID: getuid(),
                exists: { FileManager.default.fileExists(atPath: $0) })
        var components = URLComponents()
        components.scheme = "unix"
        components.path = path
        components.queryItems = [URLQueryItem(name: "store", value: store)]
        return components.url!
    }

    enum Location: Hashable {
        case daemon(socketPath: String, store: String)
        /// A store URL for ModelEngine (`sqlite:///abs/path`, `memory:name`).
        case embedded(String)
    }

    /// What the URL names, or an error saying which URLs work.
    func location() throws(ModelError) -> Location {
        let text = url.absoluteString
        func refuse(_ why: String) -> ModelError {
            ModelError(
                .invalidArgument,
                "the store URL '\(text)' \(why); use unix:///path/to/modeld.sock?store=NAME, sqlite:///path/to/file.sqlite, or memory:",
                context: ["url": text])
        }
        switch url.scheme?.lowercased() {
        case "unix":
            let path = url.path
            guard path.hasPrefix("/") else { throw refuse("has no absolute socket path") }
            let store =
                URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "store" }?.value
                ?? "default"
            guard !store.isEmpty else { throw refuse("names an empty store") }
            return .daemon(socketPath: path, store: store)
        case "sqlite", "file":
            let path = url.path
            guard path.hasPrefix("/") else { throw refuse("has no absolute file path") }
            return .embedded("sqlite://" + path)
        case "memory":
            let name = text.dropFirst("memory:".count)
            return .embedded("memory:" + (name.isEmpty ? UUID().uuidString : String(name)))
        default:
            throw refuse("has a scheme modeld doesn't know")
        }
    }
}
