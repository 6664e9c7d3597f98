import ModelCore
import NIOCore
import PostgresNIO

extension EventLoopFuture where Value: Sendable {
    /// This future's outcome, bounded: past `limit` the connection (if given) is closed, which
    /// fails what it still has under way, and the result fails `unavailable`. It fails
    /// `unavailable` sooner when the connection closes and the future stays pending: PostgresNIO
    /// never completes a statement written to a connection that has just closed. The watch runs
    /// on the future's event loop (set up there at once when called there, else handed to it).
    ///
    /// With `previous`, the limit counts from when `previous` completes rather than from now: a
    /// statement sent behind others waits for them first, and a long pipeline of quick
    /// statements is not cut for its length.
    func bounded(
        by limit: Duration, what: String, closing connection: PostgresConnection? = nil,
        after previous: EventLoopFuture<Void>? = nil
    ) -> EventLoopFuture<Value> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit {
                self.bounded(by: limit, what: what, closing: connection, after: previous)
            }
        }
        let watch = BoundedWait(
            promise: eventLoop.makePromise(of: Value.self), limit: limit, what: what, connection: connection)
        whenComplete { watch.finish($0) }
        if let previous {
            previous.hop(to: eventLoop).whenComplete { _ in watch.start() }
        } else {
            watch.start()
        }
        return watch.promise.futureResult
    }
}

/// One bounded wait: answered once, by the future, by its connection closing without an
/// answer, or by the limit (which closes the connection).
// Every member is touched on the future's event loop only: `bounded` sets it up there, and the
// future's callbacks and the scheduled checks run there.
private final class BoundedWait<Value: Sendable>: @unchecked Sendable {
    let promise: EventLoopPromise<Value>
    private let limit: Duration
    private let what: String
    private let connection: PostgresConnection?
    private var isDone = false
    private var check: Scheduled<Void>?
    private var elapsed = TimeAmount.zero
    private var closedFor = TimeAmount.zero
    private static var interval: TimeAmount { .milliseconds(250) }

    init(promise: EventLoopPromise<Value>, limit: Duration, what: String, connection: PostgresConnection?) {
        self.promise = promise
        self.limit = limit
        self.what = what
        self.connection = connection
    }

    /// Schedules the first check, unless the future has answered already.
    func start() {
        if !isDone { schedule() }
    }

    func finish(_ result: Result<Value, any Error>) {
        guard !isDone else { return }
        isDone = true
        check?.cancel()
        check = nil
        promise.completeWith(result)
    }

    private func schedule() {
        check = promise.futureResult.eventLoop.scheduleTask(in: Self.interval) { self.tick() }
    }

    private func tick() {
        guard !isDone else { return }
        elapsed = elapsed + Self.interval
        if elapsed >= TimeAmount(limit) {
            if let connection { PostgresConnectionQueue.close(connection) }
            return finish(
                .failure(
                    ModelError(
                        .unavailable,
                        "the PostgreSQL server did not answer \(what) within \(limit); the connection is given up")))
        }
        // A statement whose connection closed fails within moments, or never.
        if let connection, connection.isClosed {
            closedFor = closedFor + Self.interval
            if closedFor > .milliseconds(500) {
                return finish(
                    .failure(
                        ModelError(
                            .unavailable, "the connection to the PostgreSQL server closed before it answered \(what)")))
            }
        }
        schedule()
    }
}
