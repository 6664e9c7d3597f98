import NIOCore
import Synchronization

/// How many framed connections one event loop serves, counted on that loop: a connection alone
/// on its loop flushes a read's answers at the read's end rather than at the turn's end
/// (``TurnEndFlush``), since no other connection's answers could leave with them.
// @unchecked Sendable: `count` is read and written only on its event loop's thread (by the
// handlers of that loop's connections, as they are added and removed and as they answer).
final class LoopConnections: @unchecked Sendable {
    var count = 0
}

/// The ``LoopConnections`` of each event loop a transport's connections are on.
final class LoopConnectionsRegistry: Sendable {
    private let loops = Mutex<[ObjectIdentifier: LoopConnections]>([:])

    /// The count of `loop`'s connections (made at its first connection; a daemon has a loop or two).
    func connections(on loop: any EventLoop) -> LoopConnections {
        loops.withLock { loops in
            if let known = loops[ObjectIdentifier(loop)] { return known }
            let made = LoopConnections()
            loops[ObjectIdentifier(loop)] = made
            return made
        }
    }
}
