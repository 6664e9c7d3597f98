import Foundation
import ModelCore
import ModelStorage

extension SQLiteStore {
    /// Fetches on a reader, inside one read transaction, with `overlay` shadowing the tables it
    /// changes.
    public func fetch(_ descriptor: FetchDescriptor, overlay: ChangeSet?) async throws -> FetchResult {
        let layout = try await layout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let storeIdentifier = storeIdentifier
        let singleStatement = Self.isSingleStatement(validated, layout: layout)
        return try await readers.run(Self.placement(overlay: overlay)) { connection in
            try ReadContext.read(
                connection, layout: layout, storeIdentifier: storeIdentifier, overlay: overlay,
                singleStatement: singleStatement
            ) {
                try $0.fetch(validated)
            }
        }
    }

    /// A fetch of the stored objects on the calling thread when a reader is idle and the schema
    /// is known, within ``ReaderPool/firstTryBudget``; otherwise nil, with nothing kept.
    public func fetchWithoutWaiting(_ descriptor: FetchDescriptor) throws -> FetchResult? {
        guard let layout = try knownLayout() else { return nil }
        return try fetchWithoutWaiting(
            validated: descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier), layout: layout)
    }

    /// ``fetchWithoutWaiting(_:)`` handing the objects to `sink` as rows, without a snapshot
    /// each, for an objects fetch of one statement; any other as snapshots.
    public func fetchWithoutWaiting<Sink: ObjectRowSink>(_ descriptor: FetchDescriptor, into sink: inout Sink) throws
        -> Int?
    {
        guard let layout = try knownLayout() else { return nil }
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        guard validated.resultType == .objects, Self.isSingleStatement(validated, layout: layout) else {
            guard let objects = try fetchWithoutWaiting(validated: validated, layout: layout)?.objects else {
                return nil
            }
            return sink.add(objects) ? objects.count : nil
        }
        let storeIdentifier = storeIdentifier
        let read = try readers.runIfIdle(withinBudget: ReaderPool.firstTryBudget) { connection in
            try ReadContext.read(connection, layout: layout, storeIdentifier: storeIdentifier, singleStatement: true) {
                try $0.writeObjects(validated, into: &sink)
            }
        }
        return read ?? nil
    }

    /// ``fetchWithoutWaiting(_:)`` of a descriptor already validated.
    private func fetchWithoutWaiting(validated: FetchDescriptor, layout: SQLiteLayout) throws -> FetchResult? {
        let storeIdentifier = storeIdentifier
        let singleStatement = Self.isSingleStatement(validated, layout: layout)
        return try readers.runIfIdle(withinBudget: ReaderPool.firstTryBudget) { connection in
            try ReadContext.read(
                connection, layout: layout, storeIdentifier: storeIdentifier, singleStatement: singleStatement
            ) {
                try $0.fetch(validated)
            }
        }
    }

    /// Whether a fetch (without pending changes) is one statement, which needs no read
    /// transaction of its own: counts and identifiers are; objects are unless they read their
    /// relationships or prefetch with more.
    private static func isSingleStatement(_ validated: FetchDescriptor, layout: SQLiteLayout) -> Bool {
        let root = layout.schema[validated.entityName]?.root ?? validated.entityName
        return validated.resultType != .objects
            || (validated.relationshipKeyPathsForPrefetching.isEmpty && layout.readsObjectsInOneStatement(root: root))
    }

    /// Fetches objects batch by batch as the statement steps, inside one read transaction on a
    /// connection of its own (``StreamReaders``): the reader hands each batch over and waits
    /// while more than two are waiting, so that a fetch of any size holds a few batches, each of
    /// at most `batchSize` objects and about ``streamedBatchBytes``. With prefetching, everything
    /// is read first.
    public func fetchObjects(
        _ descriptor: FetchDescriptor, batchSize: Int,
        _ body: (_ batch: [ObjectSnapshot], _ prefetched: Bool) async throws -> Void
    ) async throws -> Int {
        var descriptor = descriptor
        descriptor.resultType = .objects
        guard descriptor.relationshipKeyPathsForPrefetching.isEmpty else {
            return try await Self.inBatches(try await fetch(descriptor, overlay: nil), batchSize: batchSize, body)
        }
        let layout = try await layout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let storeIdentifier = storeIdentifier, readers = streamReaders, size = max(batchSize, 1)
        let pipe = BatchPipe<[ObjectSnapshot]>(capacity: 2)
        async let count: Int = {
            do {
                // The store's closing stops the reader, which may be waiting for room.
                let count = try await readers.run(stopping: { pipe.abandon() }) { connection in
                    try ReadContext.read(connection, layout: layout, storeIdentifier: storeIdentifier) { context in
                        try context.streamObjects(validated, batchSize: size, byteBudget: Self.streamedBatchBytes) {
                            try pipe.send($0)
                        }
                    }
                }
                pipe.finish()
                return count
            } catch {
                pipe.finish(throwing: error)
                throw error
            }
        }()
        do {
            for try await batch in pipe.batches {
                try await body(batch, false)
                pipe.consumed()
            }
        } catch {
            pipe.abandon()
            _ = try? await count
            throw error
        }
        // The stream also ends when this task is cancelled: a reader waiting for room must stop.
        pipe.abandon()
        return try await count
    }

    /// About how many bytes of objects a streamed batch holds at most (``ObjectSnapshot/estimatedSize``):
    /// with the two batches waiting, what a stalled consumer keeps of the store's objects.
    static let streamedBatchBytes = 256 * 1024

    /// Grouped aggregates computed by SQLite, with `overlay` shadowing the tables it changes.
    public func aggregate(_ descriptor: AggregateDescriptor, overlay: ChangeSet?) async throws -> [AggregateRow] {
        try await aggregate(descriptor, overlay: overlay, hashedGroupLimit: HashAggregate.groupLimit).rows
    }

    /// ``aggregate(_:overlay:)``, counting at most `hashedGroupLimit` groups in a hash table (0:
    /// none), and how it was computed (tests compare the ways). Without an overlay it is tried on
    /// the calling thread first (unless `tryHere` is false); one that runs past that budget moves
    /// to a reader's queue, where a grouped count is split over the readers as `split` says
    /// (``ParallelGroupScan``).
    func aggregate(
        _ descriptor: AggregateDescriptor, overlay: ChangeSet?, hashedGroupLimit: Int,
        split: ParallelGroupScan.Options = .standard, tryHere: Bool = true
    ) async throws -> AggregateOutcome {
        let layout = try await layout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let storeIdentifier = storeIdentifier
        // Tried here, a grouped count the readers would split goes to the queue without counting.
        let read: @Sendable (SQLiteConnection, _ here: Bool) throws -> AggregateOutcome = { connection, here in
            try ReadContext.read(
                connection, layout: layout, storeIdentifier: storeIdentifier, overlay: overlay, singleStatement: true
            ) { context in
                if here, try context.wouldSplit(validated, hashedGroupLimit: hashedGroupLimit, options: split) {
                    throw ReaderPool.BelongsOnQueue()
                }
                return try context.aggregate(validated, hashedGroupLimit: hashedGroupLimit)
            }
        }
        guard overlay?.isEmpty ?? true else { return try await readers.run(.queue) { try read($0, false) } }
        let short: ((SQLiteConnection) throws -> AggregateOutcome)? = tryHere ? { try read($0, true) } : nil
        return try await readers.run(tryingHere: short) { connection, helpers in
            // Not a single statement: the parts of a split count share this read transaction.
            try ReadContext.read(connection, layout: layout, storeIdentifier: storeIdentifier) {
                try $0.aggregate(validated, hashedGroupLimit: hashedGroupLimit, split: (helpers, split))
            }
        }
    }

    /// Where a query or aggregate runs: tried on the calling thread first, except with an
    /// overlay, whose tables it writes (running it again after the budget is not free of effects).
    static func placement(overlay: ChangeSet?) -> ReaderPool.Placement {
        overlay?.isEmpty ?? true ? .hereWithinBudget : .queue
    }

    /// The most objects by key a read may fetch on the caller's thread (see ``ReaderPool/Placement/hereIfIdle``).
    static let shortReadLimit = 8

    /// The objects with these identifiers, in the order given; identifiers of objects that don't
    /// exist (or that name an entity the stored object is not of) are left out.
    public func snapshots(for ids: [PersistentIdentifier]) async throws -> [ObjectSnapshot] {
        let layout = try await layout()
        let keys = try ObjectLookup.keysByRoot(ids, schema: layout.schema, storeIdentifier: storeIdentifier)
        guard !keys.isEmpty else { return [] }
        let storeIdentifier = storeIdentifier
        let found = try await readers.run(ids.count <= Self.shortReadLimit ? .hereIfIdle : .queue) {
            [keys] connection in
            try Self.objects(keys, connection: connection, layout: layout, storeIdentifier: storeIdentifier)
        }
        return ids.compactMap { id in ObjectLookup.match(id, in: found, schema: layout.schema) }
    }

    /// A few objects (at most ``shortReadLimit``) read on the calling thread when a reader is
    /// idle and the schema is known; otherwise nil.
    public func snapshotsWithoutWaiting(for ids: [PersistentIdentifier]) throws -> [ObjectSnapshot]? {
        guard ids.count <= Self.shortReadLimit, let layout = try knownLayout() else { return nil }
        let keys = try ObjectLookup.keysByRoot(ids, schema: layout.schema, storeIdentifier: storeIdentifier)
        return try snapshotsWithoutWaiting(for: ids, keys: keys, layout: layout)
    }

    /// ``snapshotsWithoutWaiting(for:)`` handing the object to `sink` as a row, without a
    /// snapshot, for a read of one object whose row holds every relationship; any other read as
    /// snapshots.
    public func objectsWithoutWaiting<Sink: ObjectRowSink>(for ids: [PersistentIdentifier], into sink: inout Sink)
        throws -> Bool
    {
        guard ids.count <= Self.shortReadLimit, let layout = try knownLayout() else { return false }
        // An identifier of another store, or without a key, is looked up (and refused) below.
        if ids.count == 1, ids[0].storeIdentifier == storeIdentifier, let key = ids[0].primaryKey,
            let statement = try layout.pointReadStatement(of: ids[0].entityName), statement.readsInOneStatement
        {
            let storeIdentifier = storeIdentifier, entity = ids[0].entityName
            let read = try readers.runIfIdle { connection in
                try ReadContext.read(
                    connection, layout: layout, storeIdentifier: storeIdentifier, singleStatement: true
                ) {
                    try $0.writeObjects(
                        statement.selectOne, [.int(key)], table: statement.table, plans: statement.plans,
                        kindOf: entity, into: &sink)
                }
            }
            return (read ?? nil) != nil
        }
        let keys = try ObjectLookup.keysByRoot(ids, schema: layout.schema, storeIdentifier: storeIdentifier)
        guard let objects = try snapshotsWithoutWaiting(for: ids, keys: keys, layout: layout) else { return false }
        return sink.add(objects)
    }

    /// ``snapshotsWithoutWaiting(for:)`` of identifiers already turned into keys by hierarchy.
    private func snapshotsWithoutWaiting(
        for ids: [PersistentIdentifier], keys: [String: Set<Int64>], layout: SQLiteLayout
    ) throws -> [ObjectSnapshot]? {
        guard !keys.isEmpty else { return [] }
        let storeIdentifier = storeIdentifier
        guard
            let found = try readers.runIfIdle({ connection in
                try Self.objects(keys, connection: connection, layout: layout, storeIdentifier: storeIdentifier)
            })
        else { return nil }
        return ids.compactMap { id in ObjectLookup.match(id, in: found, schema: layout.schema) }
    }

    /// The objects with `keys`, by hierarchy and key: one statement, without a transaction, for
    /// objects of one hierarchy whose rows hold every relationship.
    private static func objects(
        _ keys: [String: Set<Int64>], connection: SQLiteConnection, layout: SQLiteLayout, storeIdentifier: UUID
    ) throws -> [String: [Int64: ObjectSnapshot]] {
        let singleStatement = keys.count == 1 && keys.keys.allSatisfy(layout.readsObjectsInOneStatement(root:))
        return try ReadContext.read(
            connection, layout: layout, storeIdentifier: storeIdentifier, singleStatement: singleStatement
        ) { context in
            try context.objectsByRoot(keys)
        }
    }
}

extension ReadContext {
    /// The objects with these keys, by hierarchy and key.
    func objectsByRoot(_ keys: [String: Set<Int64>]) throws -> [String: [Int64: ObjectSnapshot]] {
        var found: [String: [Int64: ObjectSnapshot]] = [:]
        for (root, rootKeys) in keys {
            for snapshot in try objects(root: root, keys: rootKeys.sorted()) {
                if let key = snapshot.id.primaryKey { found[root, default: [:]][key] = snapshot }
            }
        }
        return found
    }
}

extension SQLiteStore {
    /// A fetch and the history token in one read transaction (one WAL snapshot).
    public func fetchWithToken(_ descriptor: FetchDescriptor) async throws -> (FetchResult, HistoryToken?) {
        let layout = try await layout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let storeIdentifier = storeIdentifier
        return try await readers.run(.queue) { connection in
            try ReadContext.read(connection, layout: layout, storeIdentifier: storeIdentifier) { context in
                let result = try context.fetch(validated)
                return (result, try Self.historyToken(connection))
            }
        }
    }

    /// Grouped aggregates and the history token in one read transaction.
    public func aggregateWithToken(_ descriptor: AggregateDescriptor) async throws -> ([AggregateRow], HistoryToken?) {
        let layout = try await layout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let storeIdentifier = storeIdentifier
        return try await readers.run(.queue) { connection in
            try ReadContext.read(connection, layout: layout, storeIdentifier: storeIdentifier) { context in
                let rows = try context.aggregate(validated).rows
                return (rows, try Self.historyToken(connection))
            }
        }
    }

    /// The latest token, read on `connection` (inside the caller's transaction).
    static func historyToken(_ connection: SQLiteConnection) throws -> HistoryToken? {
        let value = try StoreMetadata.sequence(StoreMetadata.historySequence, connection)
        return value > 0 ? HistoryToken(value) : nil
    }
}
