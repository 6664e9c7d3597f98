import Foundation
import ModelRemote
import ModelTesting

extension BenchCommand {
    /// 0: what one call costs on each transport — empty calls (Status) over gRPC/HTTP/2 and over
    /// the framed socket, alternated round by round on the same daemon, with the wake-ups per
    /// call on each side.
    func transportWorkload(_ workloads: ModeldWorkloads, daemon: any BenchDaemon, report: inout Report) async throws {
        say("0. empty calls over each transport (\(rounds) alternated rounds)")
        var results: [DaemonTransport: (latencies: Latencies, daemon: Double, client: Double)] = [:]
        for round in 0..<rounds {
            var line: [String] = []
            for transport in [DaemonTransport.http2, .framed] {
                let result = try await DaemonClient.withClient(socketPath: workloads.socketPath, transport: transport) {
                    client in
                    _ = try await workloads.emptyRoundTrips(200, client: client)
                    let count = 2_000
                    let daemonBefore = ProcessStats.of(daemon.processIdentifier), clientBefore = ProcessStats.ofSelf()
                    let latencies = try await workloads.emptyRoundTrips(count, client: client)
                    let daemonAfter = ProcessStats.of(daemon.processIdentifier), clientAfter = ProcessStats.ofSelf()
                    return (
                        latencies, Double(ProcessStats.wakeUps(from: daemonBefore, to: daemonAfter)) / Double(count),
                        Double(ProcessStats.wakeUps(from: clientBefore, to: clientAfter)) / Double(count)
                    )
                }
                results[transport] = result
                line.append("\(transport.rawValue) p50 \(micros(result.0.percentile(50)))")
            }
            say("   round \(round + 1): " + line.joined(separator: ", "))
        }
        for (transport, result) in results {
            report.detail(
                "0 empty call \(transport.rawValue)",
                result.latencies.summary.merging(
                    ["daemon_wakeups_per_call": result.daemon, "client_wakeups_per_call": result.client]) { a, _ in a })
            say(
                "  -> \(transport.rawValue): p50 \(micros(result.latencies.percentile(50))), p99 \(micros(result.latencies.percentile(99))), "
                    + "wake-ups per call: daemon \(format(result.daemon)), client \(format(result.client))")
        }
    }
}
