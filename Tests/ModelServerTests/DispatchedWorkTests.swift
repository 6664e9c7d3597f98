import Dispatch
import Foundation
@testable import ModelServer
import Testing

/// Blocking work started on a Dispatch thread and awaited later (``DispatchedWork``).
@Suite struct DispatchedWorkTests {
    struct Refused: Error, Equatable {}

    @Test func workAwaitedBeforeItFinishesGivesItsResultWhenItDoes() async throws {
        let gate = DispatchSemaphore(value: 0)
        let work = DispatchedWork { () -> Int in
            gate.wait()
            return 42
        }
        let waiting = Task { try await work.value() }
        while !work.hasWaiter { await Task.yield() }
        gate.signal()
        #expect(try await waiting.value == 42)
    }

    @Test func workAwaitedAfterItFinishedGivesItsResult() async throws {
        let done = DispatchSemaphore(value: 0)
        let work = DispatchedWork { () -> String in
            defer { done.signal() }
            return "written"
        }
        done.wait()
        #expect(try await work.value() == "written")
        // And again: the result stays.
        #expect(try await work.value() == "written")
    }

    @Test func aFailureIsThrownToTheCaller() async throws {
        let work = DispatchedWork { () throws -> Void in throw Refused() }
        await #expect(throws: Refused.self) { try await work.value() }
    }
}
