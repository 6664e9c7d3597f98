/// Lets one operation at a time through, in arrival order. A context's operations await the
/// store, and an actor lets other calls in at every `await`; the gate keeps each operation whole.
/// Not Sendable: it lives inside the actor that uses it.
struct OperationGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Whether the caller may go straight in; if not, it must wait with ``enqueue(_:)``.
    mutating func tryEnter() -> Bool {
        if busy { return false }
        busy = true
        return true
    }

    mutating func enqueue(_ waiter: CheckedContinuation<Void, Never>) {
        waiters.append(waiter)
    }

    /// Hands the gate to the next waiter, or opens it.
    mutating func leave() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
