import FramedTransport
import GRPCCore
import Testing

/// A direct call's record cancels the call's task only while that task runs work that asked
/// to be cancelled with the call (`ServerStreamRecord.cancellingTask`, what the handlers'
/// `cancellable` uses): a store created, a schema applied or a store dropped runs to its end
/// once begun, as it did when GRPCCore's cancellation handlers did the same. Each test waits
/// for the events it names, never for time.
@Suite struct DirectCallCancellationTests {
    /// What a task saw: whether it was cancelled inside the cancellable part and after it.
    private struct Seen: Equatable {
        var inside: Bool
        var after: Bool
    }

    /// Runs a direct call's task that signals `entered` inside its cancellable part, waits
    /// there for `release` (or its cancellation), signals `left` once out of it, then waits for
    /// `later`.
    private func directCall(
        _ record: ServerStreamRecord, entered: AsyncStream<Void>.Continuation, release: AsyncStream<Void>,
        left: AsyncStream<Void>.Continuation? = nil, later: AsyncStream<Void>, seen: AsyncStream<Seen>.Continuation
    ) {
        let task = Task {
            var inside = false
            do {
                try await record.cancellingTask {
                    entered.yield()
                    for await _ in release { break }
                    inside = Task.isCancelled
                }
            } catch {
                Issue.record("the body threw \(error)")
            }
            left?.yield()
            for await _ in later { break }
            seen.yield(Seen(inside: inside, after: Task.isCancelled))
        }
        record.attach(task)
    }

    @Test func aCallCancelledWhileItsCancellablePartRunsCancelsItsTask() async throws {
        let record = ServerStreamRecord(requests: nil)
        let handle = ServerContext.RPCCancellationHandle()
        record.attach(handle)
        let (entered, enteredIn) = AsyncStream<Void>.makeStream()
        let (release, releaseIn) = AsyncStream<Void>.makeStream()
        let (seen, seenIn) = AsyncStream<Seen>.makeStream()
        directCall(record, entered: enteredIn, release: release, later: AsyncStream { $0.finish() }, seen: seenIn)
        for await _ in entered { break }
        record.cancel()
        // The task's cancellation ends its wait for `release`.
        var outcome: Seen?
        for await value in seen { outcome = value; break }
        releaseIn.finish()
        #expect(outcome == Seen(inside: true, after: true))
        #expect(handle.isCancelled, "the context's handle is cancelled too")
    }

    @Test func aCallCancelledBeforeItsCancellablePartCancelsItsTaskThere() async throws {
        let record = ServerStreamRecord(requests: nil)
        record.cancel()
        let (entered, enteredIn) = AsyncStream<Void>.makeStream()
        let (release, releaseIn) = AsyncStream<Void>.makeStream()
        let (seen, seenIn) = AsyncStream<Seen>.makeStream()
        releaseIn.finish()
        directCall(record, entered: enteredIn, release: release, later: AsyncStream { $0.finish() }, seen: seenIn)
        for await _ in entered { break }
        var outcome: Seen?
        for await value in seen { outcome = value; break }
        #expect(outcome == Seen(inside: true, after: true))
    }

    @Test func aCallCancelledAfterItsCancellablePartLeavesItsTaskRunning() async throws {
        let record = ServerStreamRecord(requests: nil)
        let handle = ServerContext.RPCCancellationHandle()
        record.attach(handle)
        let (entered, enteredIn) = AsyncStream<Void>.makeStream()
        let (release, releaseIn) = AsyncStream<Void>.makeStream()
        let (left, leftIn) = AsyncStream<Void>.makeStream()
        let (later, laterIn) = AsyncStream<Void>.makeStream()
        let (seen, seenIn) = AsyncStream<Seen>.makeStream()
        directCall(record, entered: enteredIn, release: release, left: leftIn, later: later, seen: seenIn)
        for await _ in entered { break }
        releaseIn.yield()
        releaseIn.finish()
        // Once the cancellable part has ended, the record no longer cancels the task.
        for await _ in left { break }
        record.cancel()
        laterIn.yield()
        laterIn.finish()
        var outcome: Seen?
        for await value in seen { outcome = value; break }
        #expect(outcome == Seen(inside: false, after: false))
        #expect(handle.isCancelled, "the context's handle is cancelled all the same")
    }
}
