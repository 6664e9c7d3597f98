import NIOCore
import Synchronization

/// How many framed connections one event loop serves, counted on that loop: a connection alone
/// on its loop flushes a read's answers at the read's end rather than at the turn's end
/// (``TurnEndFlush``), since no other connection's answers could leave with them.
// @unchecked Sendable: `count` is read and written only on its event loop's thread (by the
// handlers of that loop's connections, as they are added and removed and as they answer).
final class LoopConnections: @unchecked Sendable {
    var count = 0
    /// The flushes of the connections that answered in this turn, run by one task at its end.
    private var flushes: [() -> Void] = []
    private var spare: [() -> Void] = []

    /// Runs `flush` at the end of the loop's turn, with those of the turn's other connections:
    /// one task on the loop for all of them, where a task each cost its box, the loop's task
    /// queue and its lock once per connection (16 clients' point reads answer 8 connections a
    /// loop). On the loop.
    func flushAtTurnEnd(_ context: ChannelHandlerContext, _ flush: @escaping () -> Void) {
        flushes.append(flush)
        guard flushes.count == 1 else { return }
        context.eventLoop.assumeIsolated().execute { [self] in
            // Flushing may answer more (a connection whose writes were held up), for a next task.
            swap(&flushes, &spare)
            for flush in spare { flush() }
            spare.removeAll(keepingCapacity: true)
        }
    }
}

/// The ``LoopConnections`` of each event loop a transport's connections are on.
final class LoopConnectionsRegistry: Sendable {
    private let loops = Mutex<[ObjectIdentifier: LoopConnections]>([:])

    /// `loop`'s connections (made at its first connection; a daemon has a loop or two).
    func connections(on loop: any EventLoop) -> LoopConnections {
        loops.withLock { loops in
            if let known = loops[ObjectIdentifier(loop)] { return known }
            let made = LoopConnections()
            loops[ObjectIdentifier(loop)] = made
            return made
        }
    }
}
