import ModelStorage

/// Waits until at least `count` saves wait for `saves`' next group, told by the queue as the
/// last of them is queued (``GroupCommit/whenQueued(atLeast:_:)``), for at most 20 s: for saves
/// queued behind a held writer from other tasks. Returns how many are queued then.
@discardableResult
public func waitUntilQueued<Writer>(_ saves: GroupCommit<Writer>, atLeast count: Int) async -> Int {
    let queued = TestEvent()
    saves.whenQueued(atLeast: count) { queued.signal() }
    await queued.wait(timeout: .seconds(20))
    return saves.counts.queued
}
