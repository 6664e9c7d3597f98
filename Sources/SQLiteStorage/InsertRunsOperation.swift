import Foundation
import ModelCore
import ModelStorage

extension SQLiteStore {
    /// Saves `runs` as ``save(_:)`` saves the same objects as inserts: in the writer's
    /// transaction (grouped with other saves, ``SaveBatcher``), durably, with one history
    /// transaction listing every object inserted, in order. Each row is bound straight from its
    /// run. Nil, having done nothing, when an entity has unique constraints (the save algorithm
    /// resolves those, ``UniquenessResolver``) or is not in the store's schema.
    public nonisolated(nonsending) func saveInsertRuns(_ runs: [InsertRun], author: String?, user: String?) async throws
        -> SaveResult?
    {
        guard let work = try insertRunsWork(runs, layout: try await layout(), author: author, user: user) else {
            return nil
        }
        return try await saves.save(work)
    }

    /// ``saveInsertRuns(_:author:user:)`` answered through `whenSaved`, on the writer's thread,
    /// once the group it joins has committed; nil while the store's schema has not been read.
    public func submitInsertRuns(
        _ runs: [InsertRun], author: String?, user: String?,
        whenSaved: @escaping @Sendable (Result<SaveResult, any Error>) -> Void
    ) throws -> (@Sendable () -> Void)? {
        guard let layout = try knownLayout(),
            let work = try insertRunsWork(runs, layout: layout, author: author, user: user)
        else { return nil }
        let saves = saves
        let id = saves.submit(work, completion: whenSaved)
        return { saves.cancel(id) }
    }

    /// The writer's work saving `runs` (``InsertRunsOperation``); nil when they are not
    /// written straight (``InsertRun/areWritableStraight(_:in:)``). What does not need the
    /// writer's connection is found here, on the caller's thread, so that the writer, which every
    /// save waits for in turn, only writes (``InsertRunsOperation/Planned``).
    private func insertRunsWork(_ runs: [InsertRun], layout: SQLiteLayout, author: String?, user: String?) throws
        -> SaveBatcher.Work?
    {
        guard try InsertRun.areWritableStraight(runs, in: layout.schema) else { return nil }
        let planned = try InsertRunsOperation.Planned(runs, layout: layout)
        let storeIdentifier = storeIdentifier
        return { connection in
            try InsertRunsOperation(
                connection: connection, layout: layout, storeIdentifier: storeIdentifier, planned: planned,
                author: author, user: user
            ).run()
        }
    }
}

/// One save of ``InsertRun``s on the writer connection, inside its transaction: the steps of
/// ``SaveOperation`` that apply to plain inserts. Keys come after each hierarchy's last, in
/// order; every object's row, version 1, is written from its run's values; history records one
/// transaction with an insert per object, as ``SaveWrites/history`` lists them (a row per run).
struct InsertRunsOperation {
    /// The runs with what writing them needs that the store's layout tells, found before the
    /// save reaches the writer: each entity, its insert statement and where each of the
    /// statement's columns is in a run's row, and the entities touched. On the writer these look-ups
    /// (names hashed, a lock taken, columns compared) were about 3,000 of a grouped save's
    /// 47,000 instructions there (callgrind, a thread at a time).
    struct Planned: Sendable {
        struct Run: Sendable {
            let run: InsertRun
            let entity: ResolvedEntity
            let sql: String
            /// Where each column's value is in a row of the run; nil: a foreign key, null.
            let sources: [Int?]
        }

        let runs: [Run]
        let touchedEntities: Set<String>

        init(_ runs: [InsertRun], layout: SQLiteLayout) throws {
            var planned: [Run] = []
            var touched = Set<String>()
            for run in runs where run.count > 0 {
                let entity = try layout.schema.entity(run.entityName)
                let (sql, columns) = layout.insertStatement(for: entity)
                planned.append(
                    Run(run: run, entity: entity, sql: sql, sources: columns.map { run.columns.firstIndex(of: $0) }))
                touched.insert(run.entityName)
            }
            self.runs = planned
            touchedEntities = touched
        }
    }

    let connection: SQLiteConnection
    let layout: SQLiteLayout
    let storeIdentifier: UUID
    let planned: Planned
    let author: String?
    let user: String?

    func run() throws -> SaveResult {
        try SaveOperation.checkSchemaVersion(layout.schema, connection)
        guard !planned.runs.isEmpty else { return SaveResult() }
        var result = SaveResult()
        result.insertedRuns.reserveCapacity(planned.runs.count)
        for run in planned.runs {
            let firstKey = try StoreMetadata.sequence(run.entity.root, connection) + 1
            try insertRows(of: run, firstKey: firstKey)
            try StoreMetadata.setSequence(run.entity.root, to: firstKey + Int64(run.run.count) - 1, connection)
            result.insertedRuns.append(
                InsertedRun(
                    storeIdentifier: storeIdentifier, entityName: run.run.entityName, firstKey: firstKey,
                    count: run.run.count))
        }
        result.touchedEntities = planned.touchedEntities
        result.token = try recordHistory(result.insertedRuns)
        return result
    }

    /// Inserts the run's objects with keys from `firstKey` on.
    private func insertRows(of planned: Planned.Run, firstKey: Int64) throws {
        let run = planned.run, sources = planned.sources
        let width = run.columns.count
        let entityName = Value.string(planned.entity.name), version = Value.int(1)
        try run.values.withUnsafeBufferPointer { values in
            try connection.runEach(planned.sql, over: 0..<run.count, bindsEveryParameter: true) { index, statement in
                try statement.bind(.int(firstKey + Int64(index)), at: 1)
                try statement.bind(entityName, at: 2)
                try statement.bind(version, at: 3)
                let row = index * width
                for (offset, source) in sources.enumerated() {
                    try statement.bind(source.map { values[row + $0] } ?? .null, at: Int32(offset + 4))
                }
            }
        }
    }

    /// The history transaction: a row per run, standing for its objects in order.
    private func recordHistory(_ inserted: [InsertedRun]) throws -> HistoryToken {
        try SaveOperation.recordHistory(author: author, user: user, connection) { token, rows in
            _ = SaveOperation.appendInserts(
                inserted.map {
                    SaveOperation.InsertRows(entityName: $0.entityName, firstKey: $0.firstKey, count: $0.count)
                },
                token: token, to: &rows)
        }
    }
}
