import Foundation
import ModelCore
import ModelFixtures
@testable import PostgresStorage
import Testing

/// Stores on a server reached over TCP with TLS (a cluster of the suite's own that refuses
/// unencrypted connections on TCP): `sslmode` as libpq's — `require` encrypts, `verify-full`
/// checks the certificate against `sslrootcert` and the host name, `disable` is refused by the
/// server, and a certificate from another authority is refused by modeld, each saying why.
@Suite(.serialized) struct PostgresTLSTests {
    /// Whether the store's connection for saves is encrypted, as the server sees it.
    static func encrypted(_ store: PostgresStore) async throws -> Bool {
        try await store.writer.run { session in
            try session.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").first.flatMap {
                try $0.first?.decode(Bool.self)
            } ?? false
        }
    }

    @Test func sslModesConnectOrRefuseAsLibpqDoes() async throws {
        try await PostgresCluster.with(tls: true, check)
    }

    private func check(_ cluster: PostgresCluster) async throws {
        for parameters in [
            ["sslmode=require"], ["sslmode=prefer"], [],
            ["sslmode=verify-full", "sslrootcert=\(cluster.certificateAuthority)"],
        ] {
            let host = parameters.contains { $0.hasPrefix("sslmode=verify") } ? "localhost" : "127.0.0.1"
            let url = parameters.reduce(cluster.freshTCPStoreURL(host: host)) { $0 + "&" + $1 }
            let store = try await PostgresStore.open(url: url, applying: SampleTrips.schema)
            #expect(try await Self.encrypted(store), "\(parameters): the connection is encrypted")
            await store.close()
        }

        let plain = await modelError {
            _ = try await PostgresStore.open(url: cluster.freshTCPStoreURL("sslmode=disable"))
        }
        // pg_hba.conf's refusal (28000): a login refused, not a server unreachable.
        #expect(plain?.code == .permissionDenied, "\(String(describing: plain))")
        #expect(
            plain?.message.contains("no encryption") == true && plain?.message.contains("pg_hba.conf") == true,
            "\(String(describing: plain))")

        // The system's roots don't know the suite's CA; nor does a CA of another's.
        let untrusted = await modelError {
            _ = try await PostgresStore.open(url: cluster.freshTCPStoreURL(host: "localhost", "sslmode=verify-full"))
        }
        #expect(untrusted?.code == .unavailable, "\(String(describing: untrusted))")
        #expect(
            untrusted?.message.lowercased().contains("certificate") == true, "\(String(describing: untrusted))")

        // An sslrootcert that is not there is refused, not ignored, saying which file.
        let missing = await modelError {
            _ = try await PostgresStore.open(
                url: cluster.freshTCPStoreURL(
                    host: "localhost", "sslmode=verify-full", "sslrootcert=/nonexistent/ca.crt"))
        }
        #expect(
            missing?.code == .invalidArgument && missing?.message.contains("'/nonexistent/ca.crt'") == true,
            "\(String(describing: missing))")
    }

    @Test func sslParametersAreChecked() throws {
        for (bad, why) in [
            ("postgres://db.example/shop?sslmode=sometimes", "sslmode 'sometimes' is not one of disable, prefer"),
            ("postgres:///shop?host=/run/postgresql&sslmode=require", "needs a TCP host"),
            ("postgres://db.example/shop?sslmode=require&sslrootcert=/ca.crt", "sslrootcert is for sslmode verify"),
        ] {
            let error = #expect(throws: ModelError.self) { try PostgresEndpoint(url: bad) }
            #expect(
                error?.code == .invalidArgument && error?.message.contains(why) == true,
                "\(bad): \(String(describing: error))")
        }
        #expect(try PostgresEndpoint(url: "postgres://db.example/shop").tlsMode == .prefer)
        #expect(try PostgresEndpoint(url: "postgres:///shop?host=/run/postgresql").tlsMode == .disable)
    }
}
