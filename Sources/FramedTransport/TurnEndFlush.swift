import NIOCore

/// When a framed connection's answers written at once (``ServerConnectionHandler``'s direct
/// calls) are flushed: at the end of the event loop's turn, once it has handled every connection
/// that was ready, rather than each as it is written. The answers to many clients' calls then
/// leave together, and a client's event loop woken by the first finds the others' there too
/// instead of being woken once for each: with 16 clients' point reads, their wake-ups went from
/// 0.79 to 0.41 a read and their CPU from 30 to 19 µs (docs/performance.md). Anything flushed
/// sooner on the connection (a status, a stream's message) takes these answers with it, in order.
///
/// Except when the input ends. Without half-closed connections allowed, NIO closes a channel
/// whose input ended as soon as it reads the end, failing what was written and not flushed; it
/// tells the reads' end first. It finds the end in the turn that read the calls in two ways:
/// when told of the end along with the data, it reads until the end, telling the reads' end
/// after the data and again, with nothing read, at the end; and after a read that filled its
/// buffer it reads again at once, which finds the end if it came after the event loop was told
/// of the data (a race no test reaches at will). So the answers are flushed at a reads' end that
/// read nothing, and at one after a read that filled its buffer.
///
/// A connection alone on its event loop (``LoopConnections``) has no other connection's answers
/// to wait for: the answers of a read are flushed at that read's end, without the task that
/// flushes at the turn's end (its box, the loop's task queue and its lock: about 1,000-1,800
/// instructions a point read).
struct TurnEndFlush {
    /// The flush to come for answers written: none, a task at the turn's end, or at the reads' end.
    private var pending = Pending.none
    /// Whether anything was read since the last reads' end.
    private var readSince = false
    /// Whether a read since the last reads' end filled its buffer.
    private var readFilledBuffer = false

    private enum Pending {
        case none, turnEnd, readsEnd
    }

    /// Notes a read's bytes.
    mutating func read(_ buffer: ByteBuffer) {
        readSince = true
        if buffer.writableBytes == 0 { readFilledBuffer = true }
    }

    /// At the reads' end: whether to flush now.
    mutating func readsComplete() -> Bool {
        defer { (readSince, readFilledBuffer) = (false, false) }
        if pending == .readsEnd {
            pending = .none
            return true
        }
        return readFilledBuffer || !readSince
    }

    /// For an answer written: whether to schedule the flush at the turn's end (none is to come
    /// yet). With `atReadsEnd` (the connection is alone on its loop and inside a read), none is
    /// scheduled: ``readsComplete()`` says to flush.
    mutating func schedule(atReadsEnd: Bool = false) -> Bool {
        guard pending == .none else { return false }
        pending = atReadsEnd ? .readsEnd : .turnEnd
        return !atReadsEnd
    }

    /// The scheduled flush ran.
    mutating func flushed() {
        if pending == .turnEnd { pending = .none }
    }
}
