#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// The PostgreSQL server the tests use: `MODELD_TEST_POSTGRES_URL`, which `scripts/test` sets
/// to a throwaway cluster it starts (scripts/postgres-cluster). Without it the tests fail,
/// saying so — they never skip.
public enum PostgresServer {
    /// The server's URL without a `schema` parameter: `postgres:///postgres?host=/tmp/…&user=modeld`.
    public static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["MODELD_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw ServerMissing()
        }
        return url
    }

    /// A URL of a new namespace of its own (`schema=t_<random>`), for one test.
    public static func freshStoreURL() throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let base = try url()
        return base + (base.contains("?") ? "&" : "?") + "schema=\(name)"
    }

    /// Restarts the suite's server (`scripts/postgres-cluster restart`): every session is cut,
    /// and it answers again once this returns.
    public static func restart() async throws {
        guard let components = URLComponents(string: try url()),
            let directory = components.queryItems?.first(where: { $0.name == "host" })?.value
        else {
            throw ServerMissing()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        // posix_spawn and a polled waitpid: Foundation's Process did not report this child's
        // exit to a test that also runs modeld processes.
        let script = root.appendingPathComponent("scripts/postgres-cluster").path
        var pid: pid_t = 0
        let arguments = [script, "restart", directory]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let spawned = posix_spawn(&pid, script, nil, nil, &argv, environ)
        guard spawned == 0 else { throw RestartFailed(status: spawned) }
        var raw: Int32 = 0
        while waitpid(pid, &raw, WNOHANG) == 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let status = (raw >> 8) & 0xff
        guard status == 0 else { throw RestartFailed(status: status) }
    }

    struct RestartFailed: Error, CustomStringConvertible {
        let status: Int32
        var description: String { "scripts/postgres-cluster restart failed (exit status \(status))" }
    }

    struct ServerMissing: Error, CustomStringConvertible {
        var description: String {
            "MODELD_TEST_POSTGRES_URL is not set: run the tests through scripts/test, which starts a PostgreSQL cluster (scripts/postgres-cluster start) and sets it"
        }
    }
}
