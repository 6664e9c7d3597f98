import Foundation
import ModelWire

/// How a ``DaemonClient``'s calls travel to modeld: standard gRPC over HTTP/2 on the daemon's
/// socket, or the same calls in modeld's own framing on the socket beside it
/// (``DefaultLocations/framedSocketPath(for:)``), which costs a fraction per call.
public enum DaemonTransport: String, Sendable, CaseIterable {
    case framed
    case http2

    /// The framed transport when the daemon serves it (its socket is there), else HTTP/2.
    /// `MODELD_TRANSPORT=http2` or `=framed` in the environment decides instead.
    public static func preferred(
        socketPath: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DaemonTransport {
        if let named = environment["MODELD_TRANSPORT"].flatMap({ DaemonTransport(rawValue: $0.lowercased()) }) {
            return named
        }
        var info = stat()
        guard let framed = DefaultLocations.framedSocketPath(for: socketPath),
            stat(framed, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK
        else { return .http2 }
        return .framed
    }
}
