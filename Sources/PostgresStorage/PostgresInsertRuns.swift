import Foundation
import ModelCore
import ModelStorage

extension PostgresStore {
    /// Saves `runs` as ``save(_:)`` saves the same objects as inserts, in one transaction (with
    /// other saves waiting for the writer, ``GroupCommit``), durably, with one history
    /// transaction listing every object inserted, in order; but their rows go in statements of
    /// many rows each (``PostgresInsertRuns``) rather than one statement per object. Nil, having done nothing, when an entity has unique constraints
    /// (the save algorithm resolves those) or is not in the store's schema.
    public nonisolated(nonsending) func saveInsertRuns(_ runs: [InsertRun], author: String?, user: String?) async throws
        -> SaveResult?
    {
        try await saveInsertRuns(
            runs, author: author, user: user, parametersPerStatement: PostgresInsertRuns.parametersPerStatement)
    }

    /// ``saveInsertRuns(_:author:user:)`` with statements of at most `parametersPerStatement`
    /// parameters (tests make them small, to write several statements from few rows).
    func saveInsertRuns(_ runs: [InsertRun], author: String?, user: String?, parametersPerStatement: Int)
        async throws -> SaveResult?
    {
        let layout = try await currentLayout()
        try checkWritable()
        guard try InsertRun.areWritableStraight(runs, in: layout.schema) else { return nil }
        let metadata = metadata, storeIdentifier = storeIdentifier
        return try await saves.save { group in
            try PostgresInsertRuns(
                session: group.session, layout: layout, metadata: metadata, storeIdentifier: storeIdentifier,
                runs: runs, author: author, user: user, parametersPerStatement: parametersPerStatement
            ).run()
        }
    }
}

/// One save of ``InsertRun``s in a PostgreSQL transaction: the steps of ``PostgresSave`` that
/// apply to plain inserts. Keys come after each hierarchy's last (its sequence row locked until
/// the commit, as a save locks it), rows go as multi-row `INSERT`s of the same values a save
/// binds (folded forms included), and history records one transaction with an insert per
/// object, notified on the store's channel.
struct PostgresInsertRuns {
    let session: PostgresSession
    let layout: PostgresLayout
    let metadata: PostgresMetadata
    let storeIdentifier: UUID
    let runs: [InsertRun]
    let author: String?
    let user: String?
    /// The most parameters a statement binds.
    let parametersPerStatement: Int

    /// The parameters a statement binds at most, outside tests (PostgreSQL allows 65,535).
    static let parametersPerStatement = 60_000

    func run() throws -> SaveResult {
        try PostgresSave.checkingSchema(layout.schema, session: session, metadata: metadata, save(checking:))
    }

    private func save(checking storedHash: PendingStatement?) throws -> SaveResult {
        var result = SaveResult()
        var history: [String] = []
        for run in runs where run.count > 0 {
            let entity = try layout.schema.entity(run.entityName)
            let firstKey = try metadata.lockedSequence(entity.root, session) + 1
            if let mismatch = try PostgresSave.mismatch(storedHash, schema: layout.schema) { throw mismatch }
            try insertRows(of: run, entity: entity, firstKey: firstKey)
            try metadata.setSequence(entity.root, to: firstKey + Int64(run.count) - 1, session)
            let entityJSON = JSONText.string(run.entityName)
            for index in 0..<run.count {
                history.append(
                    "{\"position\":\(history.count + 1),\"kind\":\"insert\",\"entity\":\(entityJSON),\"pk\":\(firstKey + Int64(index)),\"changed\":null,\"tombstone\":null}"
                )
            }
            result.insertedRuns.append(
                InsertedRun(
                    storeIdentifier: storeIdentifier, entityName: run.entityName, firstKey: firstKey, count: run.count))
            result.touchedEntities.insert(run.entityName)
        }
        guard !history.isEmpty else { return SaveResult() }
        result.token = try PostgresSave.recordHistory(
            changes: "[" + history.joined(separator: ",") + "]", author: author, user: user, session: session,
            metadata: metadata)
        return result
    }

    /// Inserts the run's objects with keys from `firstKey` on, as many rows a statement as its
    /// parameters allow; sent without waiting (the history record waits for them).
    private func insertRows(of run: InsertRun, entity: ResolvedEntity, firstKey: Int64) throws {
        let names =
            entity.attributes.map(\.name) + entity.relationships.filter { $0.storage == .foreignKey }.map(\.name)
        // Where each column's value is in a row of the run; nil: a foreign key, null.
        let sources = names.map { run.columns.firstIndex(of: $0) }
        func values(_ index: Int) -> [(String, Value)] {
            let row = run.row(index)
            let columns = zip(names, sources).map { name, source in
                (name, source.map { row[row.startIndex + $0] } ?? .null)
            }
            return PostgresLayout.withFoldedForms(columns, of: entity)
        }
        let all = ["_pk", "_entity", "_version"] + values(0).map(\.0)
        let perStatement = max(1, parametersPerStatement / all.count)
        let into =
            "INSERT INTO \(layout.qualified(entity.root)) (\(all.map(SQL.quote).joined(separator: ", "))) VALUES "
        for start in stride(from: 0, to: run.count, by: perStatement) {
            let end = min(run.count, start + perStatement)
            var binds: [Value] = []
            binds.reserveCapacity((end - start) * all.count)
            var tuples: [String] = []
            tuples.reserveCapacity(end - start)
            for index in start..<end {
                let first = binds.count
                binds.append(.int(firstKey + Int64(index)))
                binds.append(.string(entity.name))
                binds.append(.int(1))
                binds.append(contentsOf: values(index).map(\.1))
                tuples.append("(" + (first + 1...first + all.count).map { "$\($0)" }.joined(separator: ", ") + ")")
            }
            try session.send(into + tuples.joined(separator: ", "), binds)
        }
    }
}
