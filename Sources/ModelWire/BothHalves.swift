import Dispatch
import Synchronization

/// The halves of `elements` (split at the middle), each given to `body` on a core of its own at
/// once; their results in order. For work on a large request (a bulk load's changes), which the
/// client writes and the daemon reads this way. `body` must read only the half it is given.
func bothHalves<Element, Result: Sendable>(
    of elements: ArraySlice<Element>, _ body: @Sendable (ArraySlice<Element>) -> Result
) -> [Result] {
    let middle = elements.startIndex + elements.count / 2
    // Each half is read by one thread; concurrentPerform returns only when both are done, so
    // the elements (and what they point into) outlive the work.
    nonisolated(unsafe) let halves = [elements[..<middle], elements[middle...]]
    let results = Mutex<[Result?]>([nil, nil])
    DispatchQueue.concurrentPerform(iterations: 2) { index in
        let result = body(halves[index])
        results.withLock { $0[index] = result }
    }
    // Both iterations ran and stored their result before concurrentPerform returned.
    return results.withLock { $0 }.compactMap { $0 }
}
