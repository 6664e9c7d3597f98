#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelRemote
import ModelCore
import ModelTesting
import Testing

/// The drop-ins that fit the installed unit to PostgreSQL stores (systemd/postgres-*.conf) and to
/// serving the metrics over HTTP (systemd/metrics-http.conf), rated with `systemd-analyze` as the
/// unit is (SystemdTests).
@Suite struct SystemdDropInTests {
    /// The drop-ins for PostgreSQL stores, in a `modeld.service.d` beside the unit as an operator
    /// installs them: both verify; the TCP one gives the service the host's network and Internet
    /// sockets and nothing else (its score stays at 2.5 or lower), the local one keeps the unit's
    /// sandbox whole. Their scores are recorded in docs/postgres.md.
    @Test(arguments: [
        ("postgres-tcp.conf", true, "postgres.md"), ("postgres-local.conf", false, "postgres.md"),
        ("metrics-http.conf", true, "operations.md"),
    ])
    func theDropInsOpenOnlyWhatTheyMust(dropIn: String, opensTheNetwork: Bool, document: String) async throws {
        let directory = try TemporaryDirectory.make(prefix: "sd")
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try await SystemdTests.renderUnits(in: directory)
        let dropIns = directory.appendingPathComponent("modeld.service.d")
        try FileManager.default.createDirectory(at: dropIns, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: SystemdTests.repository.appendingPathComponent("systemd/\(dropIn)"),
            to: dropIns.appendingPathComponent(dropIn))
        let (output, line, score) = try await SystemdTests.verifyAndRate(units, in: directory)
        if opensTheNetwork {
            #expect(output.contains("Service may allocate Internet sockets"), "\(output)")
            #expect(output.contains("Service has access to the host's network"), "\(output)")
        } else {
            #expect(output.contains("Service cannot allocate Internet sockets"), "\(output)")
            #expect(output.contains("Service has no access to the host's network"), "\(output)")
        }
        // What the TCP drop-in leaves closed.
        for closed in [
            "Service cannot allocate packet sockets", "Service cannot allocate netlink sockets",
            "Service cannot modify the control group file system",
        ] {
            #expect(output.contains(closed), "\(closed)")
        }
        let documented = try String(
            contentsOf: SystemdTests.repository.appendingPathComponent("docs/\(document)"), encoding: .utf8)
        #expect(
            documented.contains("`\(dropIn)`: exposure level \(score.map { String(format: "%.1f", $0) } ?? "?")"),
            "update docs/\(document): \(line)")
    }

}
