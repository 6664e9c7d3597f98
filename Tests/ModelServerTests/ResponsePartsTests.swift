@testable import FramedTransport
import GRPCCore
import Testing

/// A call's response parts on the client (`ResponseParts`) keep the semantics of the unbounded
/// `AsyncThrowingStream` they replaced: order, an error once after what came before it, the end,
/// and a cancelled reader.
@Suite struct ResponsePartsTests {
    private static func message(_ byte: UInt8) -> RPCResponsePart<[UInt8]> { .message([byte]) }

    private static func bytes(_ part: RPCResponsePart<[UInt8]>?) -> [UInt8]? {
        if case .message(let bytes)? = part { return bytes }
        return nil
    }

    @Test func partsYieldedBeforeTheReaderArriveInOrderThenTheEnd() async throws {
        let parts = ResponseParts()
        for byte in UInt8(1)...5 { parts.yield(Self.message(byte)) }
        parts.finish()
        parts.yield(Self.message(9)) // after the end: dropped
        var iterator = parts.makeAsyncIterator()
        var read: [UInt8] = []
        while let part = try await iterator.next() { read += Self.bytes(part) ?? [] }
        #expect(read == [1, 2, 3, 4, 5])
        #expect(try await iterator.next() == nil)
    }

    @Test func aWaitingReaderGetsEachPartAsItIsYielded() async throws {
        let parts = ResponseParts()
        let reader = Task {
            var read: [UInt8] = []
            for try await part in parts { read += Self.bytes(part) ?? [] }
            return read
        }
        for byte in UInt8(1)...100 {
            parts.yield(Self.message(byte))
            if byte % 10 == 0 { await Task.yield() }
        }
        parts.finish()
        #expect(try await reader.value == Array(1...100))
    }

    @Test func anErrorIsThrownOnceAfterThePartsBeforeIt() async throws {
        let parts = ResponseParts()
        parts.yield(Self.message(1))
        parts.finish(throwing: RPCError(code: .unavailable, message: "closed"))
        parts.finish() // the first end wins
        var iterator = parts.makeAsyncIterator()
        #expect(Self.bytes(try await iterator.next()) == [1])
        await #expect(throws: RPCError.self) { _ = try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test func aCancelledReaderEndsTheStream() async throws {
        let parts = ResponseParts()
        parts.yield(Self.message(1))
        let started = AsyncStream.makeStream(of: Void.self)
        let reader = Task {
            var iterator = parts.makeAsyncIterator()
            let first = Self.bytes(try await iterator.next())
            started.continuation.yield()
            // Waits (nothing more is yielded) until cancelled, then ends without an error.
            let next = try await iterator.next()
            return (first, next == nil)
        }
        for await _ in started.stream { break }
        reader.cancel()
        let (first, ended) = try await reader.value
        #expect(first == [1])
        #expect(ended)
        parts.yield(Self.message(2)) // the stream has ended: dropped
        var iterator = parts.makeAsyncIterator()
        #expect(try await iterator.next() == nil)
    }

    @Test func aReaderCancelledBeforeItAsksStillReadsWhatWasBuffered() async throws {
        let parts = ResponseParts()
        parts.yield(Self.message(7))
        let reader = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var read: [UInt8] = []
            for try await part in parts { read += Self.bytes(part) ?? [] }
            return read
        }
        #expect(try await reader.value == [7])
    }
}
