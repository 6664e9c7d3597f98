import Foundation
import ModelCore

/// Hands batches from a reader's thread (which blocks in SQLite calls) to an async consumer,
/// holding at most `capacity` batches: the reader waits for the consumer, so a slow client holds
/// a reader, never a growing pile of objects. When the consumer stops early, the reader's next
/// `send` throws, which ends its statement.
final class BatchPipe<Element: Sendable>: @unchecked Sendable { // `free` and `abandoned` are guarded by `condition`.
    private let condition = NSCondition()
    private var free: Int
    private var abandoned = false
    let batches: AsyncThrowingStream<Element, any Error>
    private let continuation: AsyncThrowingStream<Element, any Error>.Continuation

    init(capacity: Int) {
        free = capacity
        (batches, continuation) = AsyncThrowingStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Producer: waits for room, then hands `batch` over; throws `interrupted` once the consumer
    /// has gone.
    func send(_ batch: Element) throws {
        condition.lock()
        while free == 0, !abandoned { condition.wait() }
        let stop = abandoned
        if !stop { free -= 1 }
        condition.unlock()
        if stop { throw ModelError.interrupted }
        continuation.yield(batch)
    }

    /// Producer: no more batches (with the error that ended them, if any).
    func finish(throwing error: (any Error)? = nil) {
        continuation.finish(throwing: error)
    }

    /// Consumer: a batch was dealt with; its slot is free.
    func consumed() {
        condition.lock()
        free += 1
        condition.signal()
        condition.unlock()
    }

    /// Consumer: no more batches are wanted; a producer waiting for room wakes and stops.
    func abandon() {
        condition.lock()
        abandoned = true
        condition.broadcast()
        condition.unlock()
        continuation.finish()
    }
}
