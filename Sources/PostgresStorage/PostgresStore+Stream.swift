import ModelCore
import ModelStorage
import Synchronization

extension PostgresStore {
    /// Fetches objects batch by batch as PostgreSQL returns them, on a connection of its own
    /// (``PostgresStreams``): the fetch's statement runs as a cursor in one REPEATABLE READ
    /// transaction (one snapshot, which each batch's relationships are read in too), a few rows
    /// at a time, and the next rows are asked for only once the consumer has taken the batch. A
    /// fetch of any size so holds a batch of at most `batchSize` objects and about
    /// ``streamedBatchBytes``, and a stalled consumer holds its own connection only. With
    /// prefetching, everything is read first, as on SQLite.
    public func fetchObjects(
        _ descriptor: FetchDescriptor, batchSize: Int,
        _ body: (_ batch: [ObjectSnapshot], _ prefetched: Bool) async throws -> Void
    ) async throws -> Int {
        var descriptor = descriptor
        descriptor.resultType = .objects
        guard descriptor.relationshipKeyPathsForPrefetching.isEmpty else {
            return try await Self.inBatches(try await fetch(descriptor, overlay: nil), batchSize: batchSize, body)
        }
        let layout = try await currentLayout()
        let validated = try descriptor.validated(in: layout.schema, storeIdentifier: storeIdentifier)
        let storeIdentifier = storeIdentifier, size = max(batchSize, 1)
        // Whether a batch went to the consumer: a stream cut after that cannot start over.
        let handedOn = Mutex(false)
        return try await streams.run(mayRetry: { !handedOn.withLock { $0 } }) { session in
            var session = session
            session.prepares = false
            let objects = PostgresObjects(session, layout: layout, storeIdentifier: storeIdentifier)
            let plan = try PostgresRead(objects: objects).plan(validated)
            let readsMore = PostgresRead.readsMore(validated, in: layout.schema)
            _ = try await session.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            do {
                _ = try await session.query(
                    "DECLARE \(Self.cursor) NO SCROLL CURSOR FOR \(plan.sql)", plan.parameters)
                var batch: [ObjectSnapshot] = []
                var count = 0, bytes = 0, chunk = min(size, Self.largestChunk), ended = false
                while !ended {
                    let wanted = min(chunk, size - batch.count)
                    let rows = try await session.query("FETCH FORWARD \(wanted) FROM \(Self.cursor)")
                    ended = rows.count < wanted
                    guard case .objects(let read, _) = try plan.finish(rows, objects) else { break }
                    let readBytes = read.reduce(0) { $0 + $1.estimatedSize }
                    batch += read
                    bytes += readBytes
                    // Fewer rows at a time when they are big, so that a chunk stays within the budget.
                    if !read.isEmpty {
                        chunk = max(1, min(Self.largestChunk, Self.streamedBatchBytes / max(readBytes / read.count, 1)))
                    }
                    guard !batch.isEmpty, ended || batch.count >= size || bytes >= Self.streamedBatchBytes else {
                        continue
                    }
                    if readsMore {
                        try await objects.loadRelationships(&batch, properties: plan.properties, on: session)
                    }
                    count += batch.count
                    handedOn.withLock { $0 = true }
                    try await body(batch, false)
                    batch.removeAll(keepingCapacity: true)
                    bytes = 0
                }
                _ = try await session.query("COMMIT")
                return count
            } catch {
                // Whatever ended the stream (the consumer's error too), its transaction ends here,
                // so that the connection is kept clean for the next; one that cannot end it is closed.
                do {
                    _ = try await session.query("ROLLBACK")
                } catch {
                    PostgresConnectionQueue.close(session.connection)
                }
                throw error
            }
        }
    }

    /// The cursor a stream reads through (one stream at a time on a connection).
    static let cursor = "modeld_stream"
    /// The most rows one `FETCH` asks for.
    static let largestChunk = 64
    /// About how many bytes of objects a streamed batch holds at most
    /// (``ObjectSnapshot/estimatedSize``), as on SQLite.
    static let streamedBatchBytes = 256 * 1024
}
