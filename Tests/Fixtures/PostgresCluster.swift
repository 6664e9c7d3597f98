#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// A PostgreSQL cluster of one test's own (`scripts/postgres-cluster start`), for tests that stop
/// or restart the server, which would cut every other test's sessions on the suite's server.
/// ``stop()`` removes it.
public final class PostgresCluster: Sendable {
    /// The cluster's directory (its Unix socket is inside; for a TLS cluster, `ca.crt` too).
    public let directory: String
    /// The TCP port on 127.0.0.1 of a TLS cluster (``startTLS()``).
    public let port: Int?

    private init(output: String) {
        let words = output.split(separator: " ").map(String.init)
        directory = words.first ?? ""
        port = words.dropFirst().first.flatMap { Int($0) }
    }

    /// Starts a new cluster; answers once it accepts connections.
    public static func start() async throws -> PostgresCluster {
        PostgresCluster(output: try await run(["start"]).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Starts a new cluster that also listens on 127.0.0.1 (``port``), taking TLS connections
    /// only there, with a certificate for `localhost` and `127.0.0.1` signed by `ca.crt`.
    public static func startTLS() async throws -> PostgresCluster {
        PostgresCluster(output: try await run(["start-tls"]).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// A URL of a new namespace over TCP to `host` (a TLS cluster's), with `parameters`.
    public func freshTCPStoreURL(host: String = "127.0.0.1", _ parameters: String...) -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        return (["postgres://modeld@\(host):\(port ?? 5432)/postgres?schema=\(name)"] + parameters)
            .joined(separator: "&")
    }

    /// The CA that signed a TLS cluster's certificate.
    public var certificateAuthority: String { directory + "/ca.crt" }

    /// Runs `body` with a new cluster (a TLS one when `tls`), stopped and removed after,
    /// whether `body` returns or throws.
    public static func with(tls: Bool = false, _ body: (PostgresCluster) async throws -> Void) async throws {
        let cluster = try await tls ? startTLS() : start()
        do {
            try await body(cluster)
        } catch {
            try? await cluster.stop()
            throw error
        }
        try await cluster.stop()
    }

    /// A URL of a new namespace of its own on this cluster, with `parameters` (`pool_size=2`, …).
    public func freshStoreURL(_ parameters: String...) -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        // A TLS cluster's socket is named for its TCP port.
        let port = port.map { ["port=\($0)"] } ?? []
        return (["postgres:///postgres?host=\(directory)&user=modeld&schema=\(name)"] + port + parameters)
            .joined(separator: "&")
    }

    /// Stops the server (fast: every session is cut) and starts it again; answers once it
    /// accepts connections.
    public func restart() async throws {
        _ = try await Self.run(["restart", directory])
    }

    /// Stops the server, keeping its data, until ``resume()``.
    public func halt() async throws {
        _ = try await Self.run(["halt", directory])
    }

    /// Starts a halted server again; answers once it accepts connections.
    public func resume() async throws {
        _ = try await Self.run(["resume", directory])
    }

    /// Stops the server and removes the cluster.
    public func stop() async throws {
        _ = try await Self.run(["stop", directory])
    }

    /// Runs `scripts/postgres-cluster` with `arguments`; its standard output. posix_spawn and
    /// a polled waitpid: Foundation's Process did not report this child's exit to a test that
    /// also runs modeld processes.
    private static func run(_ arguments: [String]) async throws -> String {
        let script = PostgresServer.clusterScript
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("pgc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var pid: pid_t = 0
        let all = [script] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = all.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let spawned = posix_spawn(&pid, script, &actions, nil, &argv, environ)
        guard spawned == 0 else { throw PostgresServer.ScriptFailed(arguments: arguments, status: spawned) }
        var raw: Int32 = 0
        while waitpid(pid, &raw, WNOHANG) == 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let status = (raw >> 8) & 0xff
        guard status == 0 else { throw PostgresServer.ScriptFailed(arguments: arguments, status: status) }
        return (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }
}
