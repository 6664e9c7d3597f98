import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// modeld in a network namespace of its own — what the installed unit's `PrivateNetwork=yes`
/// gives it (`unshare --net` here, as these machines have no systemd as init) — against a
/// cluster that listens on both a Unix socket and TCP: a store at the Unix-socket URL is made
/// and served, while the TCP URL cannot be reached from there and fails UNAVAILABLE saying so,
/// which is what `systemd/postgres-tcp.conf`'s `PrivateNetwork=no` is for.
@Suite struct PostgresSandboxTests {
    @Test func aPrivateNetworkKeepsUnixSocketURLsAndStopsTCPOnes() async throws {
        try await PostgresCluster.with(tls: true, check)
    }

    private func check(_ cluster: PostgresCluster) async throws {
        let daemon = try await ModeldProcess.launch(
            arguments: ["--default-store", ""], launcher: ["/usr/bin/unshare", "--net"])
        do {
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let local = try await client.createStore(
                    "local", backend: nil, url: cluster.freshStoreURL(), schema: SampleTrips.schema)
                #expect(local.backend == "postgres")
                let saved = try await client.apply(
                    [
                        .insert(
                            entity: "Trip",
                            attributes: [
                                "name": .string("Lisbon"), "destination": .string("Lisbon"),
                                "startDate": .date(Timestamp(Date())), "endDate": .date(Timestamp(Date())),
                            ],
                            relationships: [:], id: nil)
                    ], in: "local")
                #expect(saved.remappedIdentifiers.count == 1)
                let counted = try await client.fetch(
                    FetchDescriptor(entityName: "Trip", resultType: .count), in: "local")
                #expect(counted == .count(1))

                let error = await modelError {
                    _ = try await client.createStore(
                        "remote", backend: nil, url: cluster.freshTCPStoreURL("sslmode=require"),
                        schema: SampleTrips.schema)
                }
                #expect(error?.code == .unavailable, "\(String(describing: error))")
                #expect(
                    error?.message.contains("cannot reach the PostgreSQL server") == true,
                    "\(String(describing: error))")
            }
        } catch {
            await daemon.remove()
            throw error
        }
        await daemon.remove()
    }
}
