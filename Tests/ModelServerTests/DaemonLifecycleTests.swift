import Foundation
import ModelCore
@testable import ModelServer
import ModelTesting
import StandardBackends
import Synchronization
import Testing

/// The daemon's phases are one state machine that refuses illegal moves; a stop that races
/// start-up is never lost, and a daemon asked to stop never reports that it serves.
@Suite struct DaemonLifecycleTests {
    @Test func aStopBeforeTheServersExistIsCarriedOutWhenTheyDo() throws {
        var lifecycle = DaemonLifecycle()
        try lifecycle.starting()
        #expect(lifecycle.stopRequested() == nil)
        let stopped = Mutex(false)
        let stop = try lifecycle.serversCreated { stopped.withLock { $0 = true } }
        stop?()
        #expect(stopped.withLock { $0 }, "the stop asked for before the servers existed was not returned")
        #expect(try lifecycle.listening() == nil)
        #expect(!lifecycle.isServing)
    }

    @Test func aStopDuringStartUpKeepsTheDaemonFromBecomingReady() throws {
        var lifecycle = DaemonLifecycle()
        try lifecycle.starting()
        #expect(try lifecycle.serversCreated {} == nil)
        #expect(lifecycle.stopRequested() != nil)
        #expect(try lifecycle.listening() == nil)
        #expect(!lifecycle.isServing)
        // A second stop does nothing more.
        #expect(lifecycle.stopRequested() == nil)
    }

    @Test func illegalMovesAreRefused() throws {
        var lifecycle = DaemonLifecycle()
        #expect(throws: DaemonLifecycle.IllegalTransition.self) { _ = try lifecycle.listening() }
        try lifecycle.starting()
        #expect(throws: DaemonLifecycle.IllegalTransition.self) { try lifecycle.starting() }
        #expect(try lifecycle.serversCreated {} == nil)
        #expect(throws: DaemonLifecycle.IllegalTransition.self) { _ = try lifecycle.serversCreated {} }
        #expect(try lifecycle.listening() != nil)
        #expect(lifecycle.isServing)
        _ = lifecycle.ended(failure: nil)
        #expect(!lifecycle.isServing)
        #expect(throws: DaemonLifecycle.IllegalTransition.self) { try lifecycle.starting() }
    }

    /// The race itself, on real daemons: a shutdown at every moment of start-up ends the run,
    /// and a daemon stopped while it started never serves afterwards.
    @Test func aShutdownThatRacesStartUpWins() async throws {
        for attempt in 0..<20 {
            let directory = try TemporaryDirectory.make(prefix: "lc")
            defer { try? FileManager.default.removeItem(at: directory) }
            var configuration = ServerConfiguration(
                socketPath: directory.appendingPathComponent("s").path,
                dataDirectory: directory.appendingPathComponent("d").path, registry: .daemon)
            configuration.defaultStore = attempt % 2 == 0 ? nil : "default"
            let daemon = ModelDaemon(configuration: configuration)
            let run = Task { try await daemon.run() }
            // Stops at a different point of start-up each time: at once, or after a few yields.
            for _ in 0..<(attempt % 7) { await Task.yield() }
            daemon.shutdown()
            try await run.value
            #expect(!daemon.isServing, "attempt \(attempt): serving after its shutdown")
            await #expect(throws: DaemonStartError.self) { try await daemon.waitUntilReady() }
        }
    }
}
