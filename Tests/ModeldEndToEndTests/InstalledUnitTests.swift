#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import SystemdHarness
import Testing

/// The installed units run by a real systemd (``NestedSystemd``): `modeld.socket` starts
/// `modeld.service` as the user `modeld` (made by `systemd-sysusers` from `modeld.sysusers`) on
/// the first connection, and the unit's sandbox serves a PostgreSQL store through the server's
/// Unix socket (`/run/postgresql`) while TCP stays closed; with `postgres-tcp.conf` as its drop-in,
/// a store over TCP is served too, and the first store still is. One systemd at a time (see
/// ``NestedSystemd``).
@Suite(.serialized) struct InstalledUnitTests {
    /// A shipped file from `systemd/`, rendered for the built modeld as `scripts/install` does.
    static func shipped(_ name: String) throws -> String {
        try String(contentsOf: SystemdTests.repository.appendingPathComponent("systemd/\(name)"), encoding: .utf8)
            .replacingOccurrences(of: "@BINDIR@", with: try modeldExecutable().deletingLastPathComponent().path)
    }

    @Test(.timeLimit(.minutes(5))) func theUnitServesPostgreSQLOverItsSocketAndTCPOnlyWithTheDropIn() async throws {
        // The namespace shares this machine's /tmp: nothing in it may be touched.
        let canary = FileManager.default.temporaryDirectory.appendingPathComponent("canary-\(UUID().uuidString)")
        try Data("still here".utf8).write(to: canary)
        defer { try? FileManager.default.removeItem(at: canary) }
        try await PostgresCluster.with(tls: true) { cluster in
            let systemd = try await NestedSystemd.boot(
                units: [
                    "modeld.service": try Self.shipped("modeld.service"),
                    "modeld.socket": try Self.shipped("modeld.socket"),
                ],
                sysusers: ["modeld.conf": try Self.shipped("modeld.sysusers")],
                binds: [cluster.directory: "/run/postgresql"])
            do {
                try await check(systemd, cluster)
            } catch {
                Issue.record("what systemd and modeld printed: \(systemd.log.suffix(4000))")
                await systemd.shutDown(stopping: ["modeld.service", "modeld.socket"])
                throw error
            }
            await systemd.shutDown(stopping: ["modeld.service", "modeld.socket"])
        }
        #expect(FileManager.default.fileExists(atPath: canary.path), "the machine's /tmp was emptied")
    }

    private func check(_ systemd: NestedSystemd, _ cluster: PostgresCluster) async throws {
        #expect(try await systemd.systemctl(["start", "modeld.socket"]).status == 0)
        let socket = systemd.path("/run/modeld/modeld.sock")
        // The unit's own URL of the server: its Unix socket where a Debian server has it.
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let local = "postgres:///postgres?host=/run/postgresql&port=\(cluster.port ?? 5432)&user=modeld&schema=\(name)"
        let tcp = cluster.freshTCPStoreURL("sslmode=require")

        // The first connection starts the service; systemd holds it until the service serves.
        try await DaemonClient.withClient(socketPath: socket) { client in
            try await Self.makeStoreWithATrip("local", url: local, trip: "Lisbon", client)
            let error = await Self.refusal(creating: "remote", url: tcp, client)
            #expect(error?.code == .unavailable, "TCP under the unit as shipped: \(String(describing: error))")
        }
        let shown = try await systemd.systemctl(["show", "modeld.service", "-p", "ActiveState", "-p", "MainPID"])
        #expect(shown.output.contains("ActiveState=active"), "\(shown)")
        let mainPID =
            shown.output.split(separator: "\n").first { $0.hasPrefix("MainPID=") }.map { $0.dropFirst(8) } ?? ""
        // The owner of its /proc directory is the user it runs as (coreutils' stat; procps may be missing).
        let user = try await systemd.run(["stat", "-c", "%U", "/proc/\(mainPID)"])
        #expect(user.output.trimmingCharacters(in: .whitespacesAndNewlines) == "modeld", "\(user)")

        // The TCP drop-in as shipped opens Internet sockets to its example address only: the
        // server's stays denied (IPAddressDeny=any).
        let dropIns = systemd.path("/run/systemd/system/modeld.service.d")
        try FileManager.default.createDirectory(atPath: dropIns, withIntermediateDirectories: true)
        func install(_ dropIn: String) async throws {
            try dropIn.write(toFile: dropIns + "/postgres-tcp.conf", atomically: true, encoding: .utf8)
            #expect(try await systemd.systemctl(["daemon-reload"]).status == 0)
            let restarted = try await systemd.systemctl(["restart", "modeld.service"])
            #expect(restarted.status == 0, "\(restarted)")
        }
        try await install(try Self.shipped("postgres-tcp.conf"))
        try await DaemonClient.withClient(socketPath: socket) { client in
            let error = await Self.refusal(creating: "remote", url: tcp, client)
            #expect(error?.code == .unavailable, "TCP to an address not allowed: \(String(describing: error))")
        }
        // With the server's address where the shipped file has an example, the store is served.
        try await install(
            try Self.shipped("postgres-tcp.conf").replacingOccurrences(of: "192.0.2.10", with: "127.0.0.1"))
        try await DaemonClient.withClient(socketPath: socket) { client in
            try await Self.makeStoreWithATrip("remote", url: tcp, trip: "Porto", client)
            #expect(
                try await client.fetch(FetchDescriptor(entityName: "Trip", resultType: .count), in: "local")
                    == .count(1))
        }
    }

    /// Makes the PostgreSQL store `name` at `url`, saves one trip in it, and checks it holds one.
    private static func makeStoreWithATrip(_ name: String, url: String, trip: String, _ client: DaemonClient)
        async throws
    {
        let made = try await client.createStore(name, backend: nil, url: url, schema: SampleTrips.schema)
        #expect(made.backend == "postgres")
        try await insertTrip(trip, into: name, client)
        #expect(try await client.fetch(FetchDescriptor(entityName: "Trip", resultType: .count), in: name) == .count(1))
    }

    /// The error of making the store `name` at `url` (nil if it was made).
    private static func refusal(creating name: String, url: String, _ client: DaemonClient) async -> ModelError? {
        await modelError { _ = try await client.createStore(name, backend: nil, url: url, schema: SampleTrips.schema) }
    }

    /// Under the unit as installed (no user namespace of its own), callers are still told apart
    /// by their Unix users: a store belongs to the user who made it, another user is refused
    /// PERMISSION_DENIED (modelctl exits 77) naming the store and the user, and root sees the owner.
    @Test(.timeLimit(.minutes(5))) func callersKeepTheirUsersUnderTheUnit() async throws {
        let alice = "mdt-unit-alice", bob = "mdt-unit-bob"
        let systemd = try await NestedSystemd.boot(
            units: [
                "modeld.service": try Self.shipped("modeld.service"),
                "modeld.socket": try Self.shipped("modeld.socket"),
            ],
            sysusers: [
                "modeld.conf": try Self.shipped("modeld.sysusers"),
                // Two callers, members of the socket's group.
                "callers.conf":
                    "u \(alice) - \"test caller\"\nu \(bob) - \"test caller\"\nm \(alice) modeld\nm \(bob) modeld\n",
            ])
        do {
            #expect(try await systemd.systemctl(["start", "modeld.socket"]).status == 0)
            let schema = systemd.directory.appendingPathComponent("schema.json")
            try #"{"entities": [{"name": "Note", "attributes": [{"name": "text", "type": "string"}]}]}"#
                .write(to: schema, atomically: true, encoding: .utf8)
            let modelctl = try modeldExecutable().deletingLastPathComponent().appendingPathComponent("modelctl").path
            func run(_ user: String, _ arguments: [String]) async throws -> CommandResult {
                try await systemd.run(
                    ["runuser", "-u", user, "--", modelctl, "--socket", "/run/modeld/modeld.sock", "--store", "shop"]
                        + arguments)
            }
            // The first call starts the service (systemd holds the connection until it serves).
            let created = try await run(alice, ["store", "create", "shop", "--format", "json"])
            #expect(created.status == 0 && created.output.contains("\"owner\":\"\(alice)\""), "\(created)")
            #expect(try await run(alice, ["schema", "apply", schema.path]).status == 0)
            #expect(try await run(alice, ["insert", "Note", "text=one"]).status == 0)

            let refused = try await run(bob, ["fetch", "Note"])
            #expect(refused.status == 77, "\(refused)")
            #expect(
                refused.error.contains("user \(bob) (uid") && refused.error.contains("may not read the store 'shop'"),
                "\(refused.error)")
            let info = try await run("root", ["store", "info", "shop", "--format", "json"])
            #expect(info.output.contains("\"owner\":\"\(alice)\""), "\(info)")
            // The unit's system call filter lets the daemon ask for its time slice (--time-slice):
            // every thread of the service has it (the kernel's account of each, in nanoseconds).
            let slices = try await systemd.run([
                "sh", "-c",
                "pid=$(systemctl show -p MainPID --value modeld.service); cat /proc/$pid/task/*/sched | grep '^se.slice'",
            ])
            let lines = slices.output.split(separator: "\n")
            #expect(lines.count >= 4, "\(slices)")
            #expect(lines.allSatisfy { $0.hasSuffix(" 100000") }, "\(slices)")
        } catch {
            Issue.record("what systemd and modeld printed: \(systemd.log.suffix(4000))")
            await systemd.shutDown(stopping: ["modeld.service", "modeld.socket"])
            throw error
        }
        await systemd.shutDown(stopping: ["modeld.service", "modeld.socket"])
    }

    /// Saves a trip named `name` (its destination the same) in `store`; the save's result.
    @discardableResult
    static func insertTrip(_ name: String, into store: String, _ client: DaemonClient) async throws -> SaveOutcome {
        let now = Timestamp(Date())
        let saved = try await client.apply(
            [
                .insert(
                    entity: "Trip",
                    attributes: [
                        "name": .string(name), "destination": .string(name), "startDate": .date(now),
                        "endDate": .date(now),
                    ],
                    relationships: [:], id: nil)
            ], in: store)
        #expect(saved.remappedIdentifiers.count == 1)
        return saved
    }
}
