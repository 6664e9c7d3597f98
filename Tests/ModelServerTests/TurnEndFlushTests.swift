@testable import FramedTransport
import NIOCore
import Testing

/// When a framed connection flushes the answers it wrote at once (``TurnEndFlush``): by a task at
/// the event loop's turn's end, scheduled once however many answers; at the reads' end for a
/// connection alone on its loop (no task); and at once at a reads' end that read nothing or
/// after a read that filled its buffer, as NIO may close the channel right after those.
@Suite struct TurnEndFlushTests {
    static let partlyFilled: ByteBuffer = {
        var buffer = ByteBufferAllocator().buffer(capacity: 64)
        buffer.writeBytes([1, 2, 3])
        return buffer
    }()

    @Test func answersOfATurnAreFlushedByOneTaskAtItsEnd() {
        var flush = TurnEndFlush()
        flush.read(Self.partlyFilled)
        let step1 = flush.schedule()
        #expect(step1)
        let step2 = flush.schedule()
        #expect(!step2, "a second answer of the turn schedules no second task")
        let step3 = flush.readsComplete()
        #expect(!step3, "the task flushes, not the reads' end")
        flush.flushed()
        flush.read(Self.partlyFilled)
        let step4 = flush.schedule()
        #expect(step4, "the next turn's answer schedules a task again")
    }

    @Test func aConnectionAloneOnItsLoopFlushesAtTheReadsEndWithoutATask() {
        var flush = TurnEndFlush()
        flush.read(Self.partlyFilled)
        let step5 = flush.schedule(atReadsEnd: true)
        #expect(!step5, "no task")
        let step6 = flush.schedule(atReadsEnd: true)
        #expect(!step6)
        let step7 = flush.readsComplete()
        #expect(step7, "flushed at the reads' end")
        // Once flushed, the next read's answers are flushed at its end again.
        flush.read(Self.partlyFilled)
        let step8 = flush.readsComplete()
        #expect(!step8, "nothing written, nothing to flush")
        flush.read(Self.partlyFilled)
        let step9 = flush.schedule(atReadsEnd: true)
        #expect(!step9)
        let step10 = flush.readsComplete()
        #expect(step10)
    }

    @Test func aReadsEndThatReadNothingOrAfterAFullBufferFlushesAtOnce() {
        var flush = TurnEndFlush()
        let step11 = flush.readsComplete()
        #expect(step11, "a reads' end that read nothing")
        var full = ByteBufferAllocator().buffer(capacity: 4)
        full.writeBytes([UInt8](repeating: 0, count: full.writableBytes))
        flush.read(full)
        let step12 = flush.schedule()
        #expect(step12)
        let step13 = flush.readsComplete()
        #expect(step13, "after a read that filled its buffer")
    }
}
