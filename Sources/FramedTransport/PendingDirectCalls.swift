import NIOCore

/// A connection's direct calls whose request is still arriving, by stream. A call's open,
/// message and end frames usually come in one read, so one call is pending at a time: it is
/// kept in a slot of its own, and only the calls pending beside it go to a table (hashing a
/// stream into a table and back was about 1,500 instructions of a point read).
struct PendingDirectCalls {
    private var current: (stream: UInt32, call: PendingDirectCall)?
    private var others: [UInt32: PendingDirectCall] = [:]
    /// What the calls' messages hold is reserved from the server's budget of requests still
    /// arriving until each call ends: a client that sends messages and never ends their calls
    /// holds no more than the budget lets it.
    let budget: RequestBudget?

    init(budget: RequestBudget? = nil) {
        self.budget = budget
    }

    var isEmpty: Bool { current == nil && others.isEmpty }
    var count: Int { (current == nil ? 0 : 1) + others.count }

    /// What ``received(_:on:)`` did with a message.
    enum Receipt {
        /// No call of that stream is pending.
        case notPending
        case kept
        /// The budget has no room for it: the call is taken out (answer it with the refusal).
        case refused
    }

    func contains(_ stream: UInt32) -> Bool {
        current?.stream == stream || others[stream] != nil
    }

    /// Adds the call of `stream`, which is not pending yet.
    mutating func insert(_ call: PendingDirectCall, for stream: UInt32) {
        if current == nil { current = (stream, call) } else { others[stream] = call }
    }

    /// Hands `bytes` to the call of `stream`, reserving their size from the budget.
    mutating func received(_ bytes: [UInt8], on stream: UInt32) -> Receipt {
        guard contains(stream) else { return .notPending }
        if let budget, !budget.reserve(bytes.count) {
            remove(stream)
            return .refused
        }
        if current?.stream == stream {
            if let replaced = current?.call.message { budget?.release(replaced.count) }
            current?.call.received(bytes)
        } else {
            if let replaced = others[stream]?.message { budget?.release(replaced.count) }
            others[stream]?.received(bytes)
        }
        return .kept
    }

    /// Takes the call of `stream` out, if it is pending, giving back what its message held.
    @discardableResult
    mutating func remove(_ stream: UInt32) -> PendingDirectCall? {
        let call: PendingDirectCall?
        if let pending = current, pending.stream == stream {
            current = nil
            call = pending.call
        } else {
            // A look-up in an empty table returns at once; a removal hashes the key first.
            call = others.isEmpty ? nil : others.removeValue(forKey: stream)
        }
        if let held = call?.message?.count, held > 0 { budget?.release(held) }
        return call
    }

    /// Marks the calls found pending for the first time with `now`, and answers when the
    /// earliest of them began waiting (nil when none is pending).
    mutating func notePending(at now: NIODeadline) -> NIODeadline? {
        var earliest: NIODeadline?
        func note(_ call: inout PendingDirectCall) {
            if call.pendingSince == nil { call.pendingSince = now }
            earliest = min(earliest ?? .distantFuture, call.pendingSince ?? now)
        }
        if current != nil { note(&current!.call) } // ! checked just before
        for stream in others.keys { note(&others[stream]!) } // ! a key of the table
        return earliest
    }

    /// The streams of the calls pending since `deadline` or earlier.
    func pending(since deadline: NIODeadline) -> [UInt32] {
        var streams: [UInt32] = []
        if let current, let since = current.call.pendingSince, since <= deadline { streams.append(current.stream) }
        for (stream, call) in others where call.pendingSince.map({ $0 <= deadline }) == true { streams.append(stream) }
        return streams
    }

    mutating func removeAll() {
        var held = current?.call.message?.count ?? 0
        for call in others.values { held += call.message?.count ?? 0 }
        if held > 0 { budget?.release(held) }
        current = nil
        others = [:]
    }
}
