#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// `--time-slice`: the scheduler time slice modeld's threads ask for, read back from the kernel's
/// own account of each thread (`se.slice` in `/proc/<pid>/task/<tid>/sched`, in nanoseconds).
@Suite struct TimeSliceTests {
    /// Every thread, the event loops', the readers' and the writer's included (all made after the
    /// request, by threads that had it), runs with the default 100 µs slice.
    @Test func everyThreadOfTheDaemonRunsWithTheSliceItAskedFor() async throws {
        try #require(kernelTakesASlice, "Linux 6.12 or later takes a time slice; this is \(kernelRelease)")
        let slices = try await Self.slicesOfADaemonInUse()
        #expect(slices.count >= 4, "the daemon's threads: \(slices)")
        #expect(slices.values.allSatisfy { $0 == 100_000 }, "slices by thread: \(slices)")
    }

    /// `--time-slice 250` asks for 250 µs; `MODELD_TIME_SLICE=0` keeps the kernel's own.
    @Test func theSliceIsSetByFlagOrVariableAndZeroKeepsTheKernels() async throws {
        try #require(kernelTakesASlice, "Linux 6.12 or later takes a time slice; this is \(kernelRelease)")
        let askedSlices = try await Self.slicesOfADaemonInUse(arguments: ["--time-slice", "250"])
        #expect(askedSlices.values.allSatisfy { $0 == 250_000 }, "\(askedSlices)")

        let keptSlices = try await Self.slicesOfADaemonInUse(environment: ["MODELD_TIME_SLICE": "0"])
        // The kernel's default (sysctl_sched_base_slice scaled by the CPUs): what this test runs with.
        let own = try Self.slices(of: getpid())
        let kernels = try #require(own.values.first)
        #expect(kernels != 100_000 && kernels != 250_000)
        #expect(keptSlices.values.allSatisfy { $0 == kernels }, "\(keptSlices) against the kernel's \(kernels)")
    }

    /// The slices of a daemon launched with `arguments` and `environment`, read after a save (the
    /// writer's thread) and a read (a reader's), so that the threads they run on exist.
    static func slicesOfADaemonInUse(arguments: [String] = [], environment: [String: String] = [:]) async throws
        -> [String: Int]
    {
        let daemon = try await ModeldProcess.launch(arguments: arguments, environment: environment)
        do {
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await client.createStore("slices", schema: SampleTrips.schema)
                let saved = try await InstalledUnitTests.insertTrip("Lisbon", into: "slices", client)
                let id = try #require(saved.remappedIdentifiers.values.first)
                let read = try await client.objects([id], in: "slices")
                #expect(read.first?.attributes["name"] == .string("Lisbon"))
            }
            let slices = try slices(of: daemon.processIdentifier)
            await daemon.remove()
            return slices
        } catch {
            await daemon.remove()
            throw error
        }
    }

    /// Each thread's `se.slice`, by thread id.
    static func slices(of pid: pid_t) throws -> [String: Int] {
        let tasks = "/proc/\(pid)/task"
        var slices: [String: Int] = [:]
        for tid in try FileManager.default.contentsOfDirectory(atPath: tasks) {
            guard let text = try? String(contentsOfFile: "\(tasks)/\(tid)/sched", encoding: .utf8) else { continue }
            let line = try #require(
                text.split(separator: "\n").first { $0.hasPrefix("se.slice") }, "no se.slice in \(tasks)/\(tid)/sched")
            let value = line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) }
            slices[tid] = try #require(value.flatMap { Int($0) }, "no number in '\(line)'")
        }
        return slices
    }

    var kernelRelease: String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Linux 6.12 or later.
    var kernelTakesASlice: Bool {
        let parts = kernelRelease.split(separator: ".").prefix(2).compactMap { Int($0) }
        guard parts.count == 2 else { return false }
        return parts[0] > 6 || (parts[0] == 6 && parts[1] >= 12)
    }
}
