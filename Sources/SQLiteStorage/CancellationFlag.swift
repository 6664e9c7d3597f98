import Synchronization

/// What SQLite's progress handler checks to stop a statement: a flag that one thread sets while
/// another runs the statement, and a budget of progress-handler calls for a job run on the
/// caller's thread (see ``ConnectionQueue/runHere(withinBudget:_:)``).
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)
    /// Progress-handler calls left before a budgeted job stops; negative while there is no budget.
    private let budget = Atomic<Int>(-1)
    private let overBudget = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set(_ isSet: Bool) {
        value.store(isSet, ordering: .releasing)
    }

    /// Whether the statement running should stop: cancelled, or out of its budget. Called by the
    /// progress handler, on the thread running the statement.
    func shouldStop() -> Bool {
        if isSet { return true }
        let left = budget.load(ordering: .relaxed)
        guard left >= 0 else { return false }
        if left == 0 {
            overBudget.store(true, ordering: .relaxed)
            return true
        }
        budget.store(left - 1, ordering: .relaxed)
        return false
    }

    /// Gives the statements that run from now on `calls` progress-handler calls between them.
    func startBudget(_ calls: Int) {
        overBudget.store(false, ordering: .relaxed)
        budget.store(calls, ordering: .relaxed)
    }

    /// Ends the budget; whether a statement was stopped for running out of it.
    func endBudget() -> Bool {
        budget.store(-1, ordering: .relaxed)
        return overBudget.exchange(false, ordering: .relaxed)
    }
}
