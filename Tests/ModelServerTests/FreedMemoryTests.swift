import Foundation
@testable import ModelServer
import Synchronization
import Testing

/// When the daemon gives a big stream's freed memory back (`FreedMemory`): after a stream of at
/// least the threshold, shortly after it ends, and not again within the interval.
@Suite struct FreedMemoryTests {
    @Test func aBigStreamHasTheArenasTrimmedOnceAnInterval() async throws {
        let (trimmed, trim) = AsyncStream<Void>.makeStream()
        let count = Mutex(0)
        let memory = FreedMemory(trim: {
            count.withLock { $0 += 1 }
            trim.yield()
        })
        // A small stream: nothing to give back.
        #expect(!memory.streamEnded(sent: FreedMemory.threshold - 1))
        // A big one: trimmed, after the delay.
        let asked = ContinuousClock.now
        #expect(memory.streamEnded(sent: FreedMemory.threshold))
        for await _ in trimmed { break }
        #expect(ContinuousClock.now - asked >= FreedMemory.delay)
        #expect(count.withLock { $0 } == 1)
        // Another right after: not again within the interval.
        #expect(!memory.streamEnded(sent: 100 * FreedMemory.threshold))
        #expect(count.withLock { $0 } == 1)
    }

    @Test func withoutATrimNothingIsAsked() {
        #expect(!FreedMemory(trim: nil).streamEnded(sent: 100 * FreedMemory.threshold))
    }
}
