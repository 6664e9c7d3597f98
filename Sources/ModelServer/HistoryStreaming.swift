import Foundation
import GRPCCore
import ModelCore
import ModelWire

/// Streams a store's history after a token, in responses under a byte budget (a transaction too
/// big for one response is split over several), and with `follow` keeps the stream open,
/// sending each new transaction as it is saved.
struct HistoryStreaming: Sendable {
    let store: StoreHandle
    let request: Modeld_V1_HistoryRequest
    let byteBudget: Int
    /// Throws (PERMISSION_DENIED) once the caller may no longer read the store: checked before
    /// each page is sent, so that a revoke ends a follower at the next save.
    let stillReads: @Sendable () throws -> Void
    /// Transactions read from the store at a time.
    static let pageSize = 256
    /// How often a follower looks for saves made by other processes on the same store file.
    static let pollInterval = Duration.milliseconds(500)

    func run(writer: RPCWriter<Modeld_V1_HistoryResponse>) async throws {
        var after = request.hasAfter ? HistoryToken(request.after) : nil
        var remaining = request.follow || request.limit == 0 ? Int.max : Int(request.limit)
        var batch = Batch(budget: byteBudget)
        while remaining > 0 {
            let generation = store.history.generation
            let page: [HistoryTransaction]
            do {
                page = try await store.container.history(after: after, limit: Self.pageSize)
            } catch let error as ModelError where error.code == .closed && store.wasDropped {
                // As a watch of a dropped store ends.
                throw store.droppedError
            }
            if !page.isEmpty { try stillReads() }
            for transaction in page where remaining > 0 {
                after = transaction.token
                if !request.author.isEmpty, transaction.author != request.author { continue }
                try await batch.add(transaction, writer: writer)
                remaining -= 1
            }
            if page.count == Self.pageSize { continue }
            try await batch.flush(to: writer, force: !request.follow)
            guard request.follow else { return }
            await store.history.waitForChange(after: generation, orFor: Self.pollInterval)
            try Task.checkCancellation()
        }
        try await batch.flush(to: writer, force: true)
    }

    /// Responses being filled.
    private struct Batch {
        let budget: Int
        var response = Modeld_V1_HistoryResponse()
        var bytes = 0
        var sentAny = false

        init(budget: Int) { self.budget = budget }

        mutating func add(_ transaction: HistoryTransaction, writer: RPCWriter<Modeld_V1_HistoryResponse>) async throws
        {
            var wire = transaction.wire
            let changes = wire.changes
            wire.changes = []
            bytes += 64
            var part = wire
            for change in changes {
                // An overestimate: every byte of every string, plus room for tags and lengths.
                let size =
                    32 + change.uri.utf8.count + change.changedProperties.reduce(0) { $0 + $1.utf8.count + 4 }
                    + change.tombstone.reduce(0) { $0 + $1.key.utf8.count + 64 }
                if bytes + size > budget, !part.changes.isEmpty {
                    response.transactions.append(part)
                    response.continues = true
                    try await send(to: writer)
                    part = wire
                }
                part.changes.append(change)
                bytes += size
            }
            response.transactions.append(part)
            if bytes >= budget { try await send(to: writer) }
        }

        /// Sends what is waiting; with `force`, sends an empty response when nothing was ever
        /// sent (so that a reader of an empty history hears the end of it).
        mutating func flush(to writer: RPCWriter<Modeld_V1_HistoryResponse>, force: Bool) async throws {
            if !response.transactions.isEmpty || (force && !sentAny) { try await send(to: writer) }
        }

        private mutating func send(to writer: RPCWriter<Modeld_V1_HistoryResponse>) async throws {
            try await writer.write(response)
            response = Modeld_V1_HistoryResponse()
            bytes = 0
            sentAny = true
        }
    }
}
