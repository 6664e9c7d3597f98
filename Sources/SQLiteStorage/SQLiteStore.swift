import Foundation
import ModelCore
import ModelStorage
import Synchronization

/// A store in an SQLite file: the ``StorageBackend`` of `sqlite:///path` URLs.
///
/// One writer connection and a small pool of readers, each on a serial queue of its own (SQLite
/// calls block, so they stay off Swift's cooperative pool); WAL, so readers never wait for the
/// writer; `synchronous=FULL`, so a save is on disk before it returns; a busy timeout, so several
/// processes can share the file; saves that wait for the writer together commit together
/// (``SaveBatcher``); a fetch streamed as it is read gets a connection of its own
/// (``StreamReaders``), so that a slow consumer holds up no other read. Predicates, sorts and aggregates compile to SQL
/// (``SQLCompiler``); an overlay is answered inside a reader's read transaction through TEMP
/// tables that shadow the tables it changes (``OverlayTables``).
public final class SQLiteStore: StorageBackend, LabelledStorage {
    /// Where the store lives (`sqlite:///abs/path.sqlite`).
    public let location: StoreLocation
    /// The store's UUID, kept in the file.
    public let storeIdentifier: UUID
    /// The labels the store was made with, kept in the file (``StoreMetadata/labelPrefix``).
    public let labels: [String: String]
    let writer: ConnectionQueue
    /// Group commit of saves on `writer`.
    let saves: SaveBatcher
    let readers: ReaderPool
    /// Connections of their own for fetches streamed as they are read.
    let streamReaders: StreamReaders
    private let state: Mutex<State>

    /// Queries and aggregates that were tried on the caller's thread, ran past their budget there
    /// (or found before starting that they would: a grouped count the readers split) and moved
    /// to a reader's queue (see ``ReaderPool/Placement/hereWithinBudget``).
    public var readsMovedToReaderQueues: Int { readers.movedToQueue }

    /// What SQLite adds to a store file's path to name its other files: the file itself, its
    /// WAL, and the WAL's shared-memory index.
    public static let fileSuffixes = ["", "-wal", "-shm"]

    /// How many reader connections a store opens: three, so that a long grouped count is split
    /// three ways (``ParallelGroupScan``), as PostgreSQL's default parallel scan has a leader and
    /// two workers. On two CPUs with another thread busy, two scanning threads were left sharing
    /// one CPU (the scheduler does not move a thread to even out two against one) and the count
    /// took twice its idle time; three share the two CPUs with the other thread
    /// (docs/performance.md, "Three readers").
    static let readerCount = 3

    private struct State {
        var isClosed = false
        var layout: SQLiteLayout
    }

    /// Opens (creating when missing) the store file at `path` and its directory; with a
    /// schema, applies it (see ``apply(schema:)``) in the same transaction that prepares the
    /// file, so a new store is made and shaped with one commit. `labels` are kept in the file in
    /// that transaction too (for a store being made: they replace labels of the same names).
    public static func open(path: String, applying schema: Schema? = nil, labels: [String: String] = [:])
        async throws -> SQLiteStore
    {
        let resolved = try schema.map { try ResolvedSchema.resolved($0) }
        let location = StoreLocation(scheme: "sqlite", path: path)
        let directory = SQLiteStorageFactory.directory(of: path)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ModelError(
                .storageFailure,
                "cannot create the directory \(directory) for the store: \(error.localizedDescription)",
                context: ["path": path])
        }
        // The writer's connection opens with this first job; the readers' with their first read.
        let writer = ConnectionQueue(path: path, role: .writer, label: "writer")
        do {
            let (identifier, schema, kept) = try await writer.run { connection in
                let prepared = try connection.transaction(write: true) {
                    () throws -> (UUID, ResolvedSchema, [String: String]) in
                    let identifier = try StoreMetadata.prepare(connection)
                    if !labels.isEmpty { try StoreMetadata.setLabels(labels, connection) }
                    let stored = try StoreMetadata.schema(connection)
                    return (
                        identifier, try resolved.map { try write($0, over: stored, connection) } ?? stored,
                        try StoreMetadata.labels(connection)
                    )
                }
                try connection.finishCreation()
                return prepared
            }
            let readers = (0..<readerCount).map {
                ConnectionQueue(path: path, role: .reader, label: "reader\($0)", keepsReads: true)
            }
            return SQLiteStore(
                location: location, storeIdentifier: identifier, labels: kept, writer: writer,
                readers: ReaderPool(readers), layout: SQLiteLayout(schema))
        } catch {
            await writer.close()
            throw error
        }
    }

    private init(
        location: StoreLocation, storeIdentifier: UUID, labels: [String: String], writer: ConnectionQueue,
        readers: ReaderPool, layout: SQLiteLayout
    ) {
        self.location = location
        self.storeIdentifier = storeIdentifier
        self.labels = labels
        self.writer = writer
        self.saves = SaveBatcher(writer: writer)
        self.readers = readers
        self.streamReaders = StreamReaders(path: location.path)
        self.state = Mutex(State(layout: layout))
    }

    /// The store's current schema (empty for a new store).
    public func schema() async throws -> ResolvedSchema {
        try await layout().schema
    }

    /// The layout of the current schema, or `closed`. While the store has no schema, another
    /// process may have given it one since: the file is read again.
    nonisolated(nonsending) func layout() async throws -> SQLiteLayout {
        if let known = try knownLayout() { return known }
        return try await storedLayout()
    }

    /// The schema the file holds now, which the store uses from now on (another process, an
    /// embedded stack or a daemon, may have migrated it since this one read it).
    public func reloadSchema() async throws -> ResolvedSchema {
        try await storedLayout().schema
    }

    /// The layout of the schema the file holds, read now and cached (kept when it is the one
    /// cached already).
    private nonisolated(nonsending) func storedLayout() async throws -> SQLiteLayout {
        let layout = try cachedLayout()
        let stored = try await readers.run { connection in
            try connection.transaction(write: false) { try StoreMetadata.schema(connection) }
        }
        guard stored.versionHash != layout.schema.versionHash else { return layout }
        return setLayout(SQLiteLayout(stored))
    }

    /// The cached layout when it has the schema, without reading anything; nil for a store
    /// opened without one, which ``layout()`` reads from the file at first use.
    func knownLayout() throws(ModelError) -> SQLiteLayout? {
        let layout = try cachedLayout()
        return layout.schema.entityNames.isEmpty ? nil : layout
    }

    /// The cached layout, or `closed`.
    func cachedLayout() throws(ModelError) -> SQLiteLayout {
        try state.withLock { (state) throws(ModelError) -> SQLiteLayout in
            guard !state.isClosed else {
                throw ModelError(.closed, "the store \(location) is closed; open it again to use it")
            }
            return state.layout
        }
    }

    /// Replaces the cached layout and returns it.
    @discardableResult
    func setLayout(_ layout: SQLiteLayout) -> SQLiteLayout {
        state.withLock { $0.layout = layout }
        return layout
    }

    /// Closes the store once the calls already queued have finished; later calls fail with
    /// `closed`.
    public func close() async {
        await close(checkpoint: true)
    }

    /// Closes the store without copying its WAL back into the file: the files are deleted next.
    public func closeForRemoval() async {
        await close(checkpoint: false)
    }

    private func close(checkpoint: Bool) async {
        let wasClosed = state.withLock { state in
            defer { state.isClosed = true }
            return state.isClosed
        }
        guard !wasClosed else { return }
        await writer.close(checkpoint: checkpoint)
        await readers.close(checkpoint: checkpoint)
        await streamReaders.close(checkpoint: checkpoint)
    }

}
