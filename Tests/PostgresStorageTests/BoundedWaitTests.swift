import ModelCore
import NIOCore
import NIOPosix
@testable import PostgresStorage
import Testing

/// The bound on a PostgreSQL statement's answer (`bounded(by:what:closing:after:)`): a statement
/// sent behind another is given its limit from when that one answered, so that a long pipeline
/// of quick statements (a large save's) is not cut for its length; alone, it counts from now.
@Suite struct BoundedWaitTests {
    @Test func aBoundCountsFromTheAnswerOfTheStatementBefore() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        // The first answers after 1.5 s, past the second's limit of 1 s; the second answers
        // 0.3 s after the first, well within its limit counted from there.
        let first = loop.makePromise(of: Void.self), second = loop.makePromise(of: Int.self)
        let bounded = second.futureResult.bounded(by: .seconds(1), what: "a test", after: first.futureResult)
        first.futureResult.whenSuccess { _ in loop.scheduleTask(in: .milliseconds(300)) { second.succeed(7) } }
        loop.scheduleTask(in: .milliseconds(1_500)) { first.succeed() }
        #expect(try await bounded.get() == 7)

        // The same wait counted from now runs out.
        let alone = loop.makePromise(of: Int.self)
        let unchained = alone.futureResult.bounded(by: .seconds(1), what: "a test")
        let late = loop.scheduleTask(in: .milliseconds(1_800)) { alone.succeed(7) }
        do {
            _ = try await unchained.get()
            Issue.record("the wait did not run out")
        } catch let error as ModelError {
            #expect(error.code == .unavailable && error.message.contains("did not answer a test"), "\(error)")
        }
        _ = try await late.futureResult.get()
    }

    /// Many waits on one loop are checked together (one repeated check for all of them): each
    /// runs out on its own limit, and one answered in time is answered with its value.
    @Test(.timeLimit(.minutes(1))) func manyWaitsOnALoopEachRunOutOrAnswer() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let promises = (0..<100).map { _ in loop.makePromise(of: Int.self) }
        let bounded = promises.enumerated().map { index, promise in
            promise.futureResult.bounded(
                by: index.isMultiple(of: 2) ? .seconds(1) : .seconds(30), what: "wait \(index)")
        }
        // The odd ones answer after the even ones have run out.
        loop.scheduleTask(in: .milliseconds(1_600)) {
            for (index, promise) in promises.enumerated() where !index.isMultiple(of: 2) { promise.succeed(index) }
        }
        for (index, future) in bounded.enumerated() {
            do {
                let value = try await future.get()
                #expect(!index.isMultiple(of: 2) && value == index, "wait \(index) answered \(value)")
            } catch let error as ModelError {
                #expect(index.isMultiple(of: 2), "wait \(index) failed: \(error)")
                #expect(error.code == .unavailable && error.message.contains("wait \(index)"), "\(error)")
            }
        }
        for (index, promise) in promises.enumerated() where index.isMultiple(of: 2) { promise.succeed(index) }
    }
}
