import FramedTransport
import ModelCore

/// The memory the daemon's watches hold, against one cap shared by every client (`modeld
/// --max-watch-memory`). A watch keeps its last result for as long as it is open (to tell the
/// next one's difference), so without a cap a client with many connections and many watches of
/// large results could make the daemon hold gigabytes. A watch holds ``perWatch`` bytes for
/// itself from its start, which bounds how many there can be, and its result's estimated size
/// (``WatchResult/estimatedSize``) once read. One that does not fit ends with
/// RESOURCE_EXHAUSTED, which frees what it held; the others go on.
final class WatchMemory: Sendable {
    /// What a watch holds besides its result: its task, stream and subscription (about 0.75 KB
    /// measured, docs/live-queries.md), rounded up.
    static let perWatch = 2 * 1024

    private let budget: ByteBudget

    init(capacity: Int) {
        budget = ByteBudget(capacity: capacity)
    }

    /// The most bytes the watches may hold.
    var capacity: Int { budget.capacity }

    /// The bytes the watches hold now.
    var held: Int { budget.held }

    /// Makes what one watch holds, `held`, `bytes`: throws RESOURCE_EXHAUSTED, holding what it
    /// held, when the more it needs does not fit.
    func resize(_ held: inout Int, to bytes: Int) throws(ModelError) {
        if bytes <= held {
            budget.release(held - bytes)
            held = bytes
            return
        }
        guard budget.reserve(bytes - held) else { throw refusal(more: bytes - held, holding: held) }
        held = bytes
    }

    /// Gives back what a watch held.
    func release(_ held: Int) {
        budget.release(held)
    }

    private func refusal(more: Int, holding: Int) -> ModelError {
        let cap = "modeld --max-watch-memory \(Self.text(capacity))"
        let need =
            holding == 0
            ? "a new watch needs \(Self.text(more))" : "this watch's result needs \(Self.text(more)) more"
        return ModelError(
            .resourceExhausted,
            "the daemon's watches hold \(Self.text(budget.held)) of the \(cap) they may, and \(need): end watches no longer needed, or narrow this one (a fetch limit, a tighter predicate)",
            context: ["held_bytes": String(budget.held), "max_watch_memory": String(capacity)])
    }

    /// Bytes as a person reads them: 512 bytes, 12 KiB, 3.4 MiB.
    private static func text(_ bytes: Int) -> String {
        if bytes < 1024 { return "\(bytes) bytes" }
        if bytes < 1024 * 1024 { return "\(bytes / 1024) KiB" }
        let tenths = bytes * 10 / (1024 * 1024)
        return tenths % 10 == 0 ? "\(tenths / 10) MiB" : "\(tenths / 10).\(tenths % 10) MiB"
    }
}
