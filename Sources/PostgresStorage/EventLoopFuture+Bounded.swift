import ModelCore
import NIOCore
import PostgresNIO
import Synchronization

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
/// answer, or by the limit (which closes the connection). Checked every 250 ms by its event
/// loop's ``BoundedWaitTicker`` while it waits, so that its limit is counted in the checks it
/// sees: the first comes up to 250 ms after it starts, so a wait gives up 0-250 ms before its
/// limit.
// Every member is touched on the future's event loop only: `bounded` sets it up there, and the
// future's callbacks and the ticker's checks run there.
private final class BoundedWait<Value: Sendable>: BoundedWaitChecked, @unchecked Sendable {
    let promise: EventLoopPromise<Value>
    private let limit: Duration
    private let what: String
    private let connection: PostgresConnection?
    private var isDone = false
    private var isWatched = false
    private var elapsed = TimeAmount.zero
    private var closedFor = TimeAmount.zero

    init(promise: EventLoopPromise<Value>, limit: Duration, what: String, connection: PostgresConnection?) {
        self.promise = promise
        self.limit = limit
        self.what = what
        self.connection = connection
    }

    /// Has the ticker check it, unless the future has answered already.
    func start() {
        guard !isDone, !isWatched else { return }
        isWatched = true
        BoundedWaitTicker.on(promise.futureResult.eventLoop).watch(self)
    }

    func finish(_ result: Result<Value, any Error>) {
        guard !isDone else { return }
        isDone = true
        promise.completeWith(result)
    }

    /// One check, `interval` after the last; whether it still waits.
    func check(after interval: TimeAmount) -> Bool {
        guard !isDone else { return false }
        elapsed = elapsed + interval
        if elapsed >= TimeAmount(limit) {
            if let connection { PostgresConnectionQueue.close(connection) }
            finish(
                .failure(
                    ModelError(
                        .unavailable,
                        "the PostgreSQL server did not answer \(what) within \(limit); the connection is given up")))
            return false
        }
        // A statement whose connection closed fails within moments, or never.
        if let connection, connection.isClosed {
            closedFor = closedFor + interval
            if closedFor > .milliseconds(500) {
                finish(
                    .failure(
                        ModelError(
                            .unavailable, "the connection to the PostgreSQL server closed before it answered \(what)")))
                return false
            }
        }
        return true
    }
}

/// A wait ``BoundedWaitTicker`` checks.
private protocol BoundedWaitChecked: AnyObject {
    /// One check, `interval` after the last; whether it still waits.
    func check(after interval: TimeAmount) -> Bool
}

/// Checks an event loop's bounded waits every 250 ms, all with one repeated task that runs
/// only while some wait: a timer set and cancelled for every statement cost more than a
/// twentieth of a point read's instructions.
// Its members are touched on its event loop only (``watch(_:)`` is called there, and the
// repeated task runs there).
private final class BoundedWaitTicker: @unchecked Sendable {
    static let interval = TimeAmount.milliseconds(250)
    private static let tickers = Mutex<[ObjectIdentifier: BoundedWaitTicker]>([:])

    private let eventLoop: any EventLoop
    private var waits: [any BoundedWaitChecked] = []
    private var task: RepeatedTask?

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// The ticker of `eventLoop`.
    static func on(_ eventLoop: any EventLoop) -> BoundedWaitTicker {
        tickers.withLock { tickers in
            if let ticker = tickers[ObjectIdentifier(eventLoop)] { return ticker }
            let ticker = BoundedWaitTicker(eventLoop: eventLoop)
            tickers[ObjectIdentifier(eventLoop)] = ticker
            return ticker
        }
    }

    func watch(_ wait: any BoundedWaitChecked) {
        eventLoop.preconditionInEventLoop()
        waits.append(wait)
        guard task == nil else { return }
        task = eventLoop.scheduleRepeatedTask(initialDelay: Self.interval, delay: Self.interval) { _ in
            self.tick()
        }
    }

    private func tick() {
        // A check that gives up completes a promise, whose callbacks may start new waits here.
        let checked = waits
        waits = []
        let waiting = checked.filter { $0.check(after: Self.interval) }
        waits = waiting + waits
        if waits.isEmpty {
            task?.cancel()
            task = nil
        }
    }
}
