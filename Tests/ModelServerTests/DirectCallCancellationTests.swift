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

    /// A direct call's record with its context's cancellation handle attached.
    private func recordWithHandle() -> (ServerStreamRecord, ServerContext.RPCCancellationHandle) {
        let record = ServerStreamRecord(requests: nil)
        let handle = ServerContext.RPCCancellationHandle()
        record.attach(handle)
        return (record, handle)
    }

    @Test func aCallCancelledWhileItsCancellablePartRunsCancelsItsTask() async throws {
        let (record, handle) = recordWithHandle()
        let (entered, enteredIn) = AsyncStream<Void>.makeStream()
        let (release, releaseIn) = AsyncStream<Void>.makeStream()
        let (seen, seenIn) = AsyncStream<Seen>.makeStream()
        directCall(record, entered: enteredIn, release: release, later: AsyncStream { $0.finish() }, seen: seenIn)
        _ = await entered.first { _ in true }
        record.cancel()
        // The task's cancellation ends its wait for `release`.
        let outcome = await seen.first { _ in true }
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
        _ = await entered.first { _ in true }
        let outcome = await seen.first { _ in true }
        #expect(outcome == Seen(inside: true, after: true))
    }

    @Test func aCallCancelledAfterItsCancellablePartLeavesItsTaskRunning() async throws {
        let (record, handle) = recordWithHandle()
        let (entered, enteredIn) = AsyncStream<Void>.makeStream()
        let (release, releaseIn) = AsyncStream<Void>.makeStream()
        let (left, leftIn) = AsyncStream<Void>.makeStream()
        let (later, laterIn) = AsyncStream<Void>.makeStream()
        let (seen, seenIn) = AsyncStream<Seen>.makeStream()
        directCall(record, entered: enteredIn, release: release, left: leftIn, later: later, seen: seenIn)
        _ = await entered.first { _ in true }
        releaseIn.yield()
        releaseIn.finish()
        // Once the cancellable part has ended, the record no longer cancels the task.
        _ = await left.first { _ in true }
        record.cancel()
        laterIn.yield()
        laterIn.finish()
        let outcome = await seen.first { _ in true }
        #expect(outcome == Seen(inside: false, after: false))
        #expect(handle.isCancelled, "the context's handle is cancelled all the same")
    }
}
