import Foundation
import GRPCCore
import ModelCore
import ModelWire
import Synchronization

extension DaemonClient {
    /// Fetches from a store, without a session. A fetch whose limit is at most a response's
    /// objects (``FetchCollector/gatheredLimit``) and that prefetches nothing has its responses
    /// gathered whole (``MethodCaller/fetchWhole(_:resultType:)``); any other is read as a
    /// stream, each response decoded as it comes.
    public func fetch(_ descriptor: FetchDescriptor, in store: String) async throws -> FetchResult {
        try await call {
            let call = FetchCall(store: store, descriptor: descriptor)
            if FetchCollector.isBounded(descriptor) {
                return try await caller.fetchWhole(call, resultType: descriptor.resultType)
            }
            return try await caller.fetch(call) {
                try await FetchCollector.collect($0, resultType: descriptor.resultType)
            }
        }
    }

    /// Fetches from a store batch by batch, handing each batch of objects to `body` as it
    /// arrives, so that a fetch of any size needs only a batch of memory. Returns the count.
    @discardableResult
    public func fetch(
        _ descriptor: FetchDescriptor, in store: String, batchSize: Int = 0,
        _ body: @Sendable @escaping ([ObjectSnapshot]) async throws -> Void
    ) async throws -> Int {
        try await call {
            let call = FetchCall(store: store, descriptor: descriptor, batchSize: Int32(clamping: batchSize))
            return try await caller.fetchEachBatch(call) { chunks in
                var count = 0
                for try await chunk in chunks {
                    if !chunk.objects.isEmpty { try await body(chunk.objects) }
                    if let total = chunk.count { count = total }
                }
                return count
            }
        }
    }

    /// Counts what a fetch would return.
    public nonisolated(nonsending) func count(_ descriptor: FetchDescriptor, in store: String) async throws -> Int {
        try await call {
            Int(
                try await unary(
                    Modeld_V1_QueryService.Method.Count.self,
                    Modeld_V1_StoreFetchRequest.with {
                        $0.store = store
                        $0.fetch = descriptor.wire
                    }
                ).count)
        }
    }

    /// Grouped aggregates, computed by the store.
    public func aggregate(_ descriptor: AggregateDescriptor, in store: String) async throws -> [AggregateRow] {
        try await call {
            try await aggregate(
                Modeld_V1_QueryService.Method.Aggregate.self,
                Modeld_V1_StoreAggregateRequest.with {
                    $0.store = store
                    $0.aggregate = descriptor.wire
                })
        }
    }

    /// Objects by identifier; missing ones are left out.
    public nonisolated(nonsending) func objects(_ ids: [PersistentIdentifier], in store: String) async throws
        -> [ObjectSnapshot]
    {
        try await call {
            try await caller.objects(GetObjectsCall(store: store, ids: ids))
        }
    }

    /// History transactions after `token` (all when nil), oldest first.
    public func history(after token: HistoryToken?, in store: String, author: String? = nil, limit: Int = 0)
        async throws -> [HistoryTransaction]
    {
        let collected = Mutex<[HistoryTransaction]>([])
        try await followHistory(after: token, in: store, author: author, limit: limit, follow: false) { transaction in
            collected.withLock { $0.append(transaction) }
        }
        return collected.withLock { $0 }
    }

    /// Deletes the history transactions of `store` up to and including `token`; returns `token`,
    /// or nil when history through it had been deleted already.
    @discardableResult
    public func deleteHistory(through token: HistoryToken, in store: String) async throws -> HistoryToken? {
        try await call(small: true) {
            let response = try await unary(
                Modeld_V1_QueryService.Method.DeleteHistory.self,
                Modeld_V1_DeleteHistoryRequest.with {
                    $0.store = store
                    $0.through = token.rawValue
                })
            return response.hasThrough ? HistoryToken(response.through) : nil
        }
    }

    /// Deletes the history transactions of `store` saved before `date`; returns the newest
    /// token deleted (nil when none was).
    @discardableResult
    public func deleteHistory(savedBefore date: Date, in store: String) async throws -> HistoryToken? {
        try await call(small: true) {
            let response = try await unary(
                Modeld_V1_QueryService.Method.DeleteHistory.self,
                Modeld_V1_DeleteHistoryRequest.with {
                    $0.store = store
                    $0.savedBeforeMicros = Timestamp(date).microsecondsSince1970
                })
            return response.hasThrough ? HistoryToken(response.through) : nil
        }
    }

    /// History after `token`; with `follow`, also each transaction saved from now on, until the
    /// calling task is cancelled. `body` sees each transaction whole, in token order.
    public func followHistory(
        after token: HistoryToken?, in store: String, author: String? = nil, limit: Int = 0, follow: Bool = true,
        _ body: @Sendable @escaping (HistoryTransaction) async throws -> Void
    ) async throws {
        try await call(small: true) {
            let request = Modeld_V1_HistoryRequest.with {
                $0.store = store
                if let token { $0.after = token.rawValue }
                $0.author = author ?? ""
                $0.limit = Int64(limit)
                $0.follow = follow
            }
            try await serverStreaming(Modeld_V1_QueryService.Method.History.self, request) { messages in
                var pending: Modeld_V1_HistoryTransaction?
                for try await message in messages {
                    for (index, part) in message.transactions.enumerated() {
                        if var whole = pending, whole.token == part.token {
                            whole.changes += part.changes
                            pending = whole
                        } else {
                            if let whole = pending { try await body(try HistoryTransaction(wire: whole)) }
                            pending = part
                        }
                        let continues = message.continues && index == message.transactions.count - 1
                        if !continues, let whole = pending {
                            try await body(try HistoryTransaction(wire: whole))
                            pending = nil
                        }
                    }
                }
                if let whole = pending { try await body(try HistoryTransaction(wire: whole)) }
            }
        }
    }

    /// Applies edits atomically, as one save and one history transaction.
    @discardableResult
    public nonisolated(nonsending) func apply(
        _ edits: [ObjectEdit], in store: String, author: String? = nil, uniquenessPolicy: UniquenessPolicy = .error,
        returnTransaction: Bool = false
    ) async throws -> SaveOutcome {
        try await call {
            try await caller.apply(
                ApplyCall(
                    store: store, author: author, uniquenessPolicy: uniquenessPolicy, edits: edits,
                    returnTransaction: returnTransaction))
        }
    }

    /// Deletes every object of `entity` matching `predicate` (delete rules included), as one save.
    @discardableResult
    public func batchDelete(
        _ entity: String, where predicate: ModelCore.Predicate?, in store: String, author: String? = nil
    ) async throws -> BatchOutcome {
        try await call {
            let result = try await unary(
                Modeld_V1_QueryService.Method.BatchDelete.self,
                Modeld_V1_BatchDeleteRequest.with {
                    $0.store = store
                    $0.entity = entity
                    if let predicate { $0.predicate = Modeld_V1_Predicate(predicate) }
                    $0.author = author ?? ""
                })
            return BatchOutcome(
                matched: Int(result.matched), deleted: Int(result.deleted),
                token: result.hasToken ? HistoryToken(result.token) : nil)
        }
    }

    /// Sets `attributes` on every object of `entity` matching `predicate`, as one save.
    @discardableResult
    public func batchUpdate(
        _ entity: String, where predicate: ModelCore.Predicate?, set attributes: [String: Value], in store: String,
        author: String? = nil
    ) async throws -> BatchOutcome {
        try await call {
            let result = try await unary(
                Modeld_V1_QueryService.Method.BatchUpdate.self,
                Modeld_V1_BatchUpdateRequest.with {
                    $0.store = store
                    $0.entity = entity
                    if let predicate { $0.predicate = Modeld_V1_Predicate(predicate) }
                    $0.attributes = attributes.wire
                    $0.author = author ?? ""
                })
            return BatchOutcome(
                matched: Int(result.matched), deleted: 0, token: result.hasToken ? HistoryToken(result.token) : nil)
        }
    }
}

/// Collects a streamed fetch into one `FetchResult`.
struct FetchCollector {
    /// The largest limit of a fetch whose responses are gathered whole: the daemon's objects a
    /// response by default, so that such an answer is usually one response, and never holds
    /// more objects than that.
    static let gatheredLimit = 1_000

    /// Whether `descriptor`'s answer is bounded: a limit of at most ``gatheredLimit``, nothing
    /// prefetched.
    static func isBounded(_ descriptor: FetchDescriptor) -> Bool {
        guard let limit = descriptor.limit else { return false }
        return limit <= gatheredLimit && descriptor.relationshipKeyPathsForPrefetching.isEmpty
    }

    private var objects: [ObjectSnapshot] = [], prefetched: [ObjectSnapshot] = [], ids: [PersistentIdentifier] = []
    private var count = 0

    /// Adds a chunk's results. The first chunk's arrays are taken as they are: appending them
    /// copied each object (retaining its strings and tables) and then freed the chunk's copies,
    /// 9,000 instructions of a 50-object query.
    mutating func add(_ chunk: consuming FetchChunk) {
        Self.append(chunk.objects, to: &objects)
        Self.append(chunk.prefetched, to: &prefetched)
        Self.append(chunk.identifiers, to: &ids)
        if let total = chunk.count { count = total }
    }

    private static func append<Element>(_ elements: [Element], to array: inout [Element]) {
        if array.isEmpty { array = elements } else { array += elements }
    }

    func result(_ resultType: FetchDescriptor.ResultType) -> FetchResult {
        switch resultType {
        case .objects: .objects(objects, prefetched: prefetched)
        case .identifiers: .identifiers(ids)
        case .count: .count(count)
        }
    }

    static func collect(_ chunks: RPCAsyncSequence<FetchChunk, any Error>, resultType: FetchDescriptor.ResultType)
        async throws -> FetchResult
    {
        var collector = FetchCollector()
        for try await chunk in chunks { collector.add(chunk) }
        return collector.result(resultType)
    }
}
