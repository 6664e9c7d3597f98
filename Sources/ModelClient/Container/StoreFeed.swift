import ModelCore

/// What a store call hands to its callback, read as an async iterator: the call runs in a task
/// of its own, cancelled when the feed goes. With `.newest` only the newest unread element is
/// kept (each carries all that matters, as an observation's whole result); with `.all(ahead:)`
/// every element is kept, the call waiting while that many are unread.
final class StoreFeed<Element: Sendable> {
    enum Buffering {
        case newest
        case all(ahead: Int)
    }

    private var iterator: AsyncThrowingStream<Element, any Error>.AsyncIterator
    /// Room for unread elements, with `.all(ahead:)`.
    private let room: AsyncSemaphore?
    private let task: Task<Void, Never>

    init(
        _ buffering: Buffering,
        _ call: @escaping @Sendable (_ body: @escaping @Sendable (Element) async throws -> Void) async throws -> Void
    ) {
        let room: AsyncSemaphore?
        let policy: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy
        switch buffering {
        case .newest:
            room = nil
            policy = .bufferingNewest(1)
        case .all(let ahead):
            room = AsyncSemaphore(permits: ahead)
            policy = .unbounded
        }
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Element.self, throwing: (any Error).self, bufferingPolicy: policy)
        self.room = room
        task = Task {
            do {
                try await call { element in
                    try await room?.acquire()
                    continuation.yield(element)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        iterator = stream.makeAsyncIterator()
    }

    func next(isolation actor: isolated (any Actor)? = #isolation) async throws -> Element? {
        let element = try await iterator.next(isolation: actor)
        if element != nil { room?.release() }
        return element
    }

    deinit { task.cancel() }
}
