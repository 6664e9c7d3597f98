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

    /// The repository's `scripts/postgres-cluster`.
    static var clusterScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/postgres-cluster").path
    }

    struct ScriptFailed: Error, CustomStringConvertible {
        let arguments: [String]
        let status: Int32
        var description: String {
            "scripts/postgres-cluster \(arguments.joined(separator: " ")) failed (exit status \(status)); its errors are in the test's output"
        }
    }

    struct ServerMissing: Error, CustomStringConvertible {
        var description: String {
            "MODELD_TEST_POSTGRES_URL is not set: run the tests through scripts/test, which starts a PostgreSQL cluster (scripts/postgres-cluster start) and sets it"
        }
    }
}
