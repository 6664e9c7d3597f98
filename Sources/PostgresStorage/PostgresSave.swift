import Foundation
import ModelCore
import ModelStorage

/// One save in one PostgreSQL transaction, on ModelStorage's one save algorithm (expected
/// versions, ``ChangeSetPlan``, ``UniquenessResolver``, ``SaveWrites``) reading through
/// ``PostgresStoredRows``; this writes what it computed and the history transaction, and
/// notifies the store's channel (delivered at commit). Durable when the commit returns
/// (`synchronous_commit` is the server's, on by default).
struct PostgresSave {
    let session: PostgresSession
    let layout: PostgresLayout
    let metadata: PostgresMetadata
    let storeIdentifier: UUID
    let changes: ChangeSet

    var schema: ResolvedSchema { layout.schema }

    /// The statements whose answers the save does not need are sent without waiting
    /// (``PostgresSession/send(_:keys:_:)``): the lock, the schema's version (checked once a later
    /// answer came), the writes and the key sequences. It waits for its reads, the history
    /// record and the commit.
    func run() throws -> SaveResult {
        try Self.checkingSchema(schema, session: session, metadata: metadata, save(checking:))
    }

    /// Runs `save` under the store's shared lock, handing it the pending answer of the store's
    /// schema version (sent without waiting) to check once a later answer came. A statement that
    /// failed because another process changed the schema throws the mismatch instead. In a group
    /// whose transaction holds the lock and found `schema` already (``GroupMemo``), the
    /// save takes neither again, and is handed nil.
    static func checkingSchema<T>(
        _ schema: ResolvedSchema, session: PostgresSession, metadata: PostgresMetadata,
        _ save: (PendingStatement?) throws -> T
    ) throws -> T {
        if let memo = session.memo, memo.checkedSchema == schema.versionHash { return try save(nil) }
        try metadata.sharedLock(session)
        let storedHash = try session.send("SELECT \"value\" FROM \(metadata.metaTable) WHERE \"key\" = 'schemaHash'")
        do {
            let result = try save(storedHash)
            // Every statement the save sent has answered before it returns (the schema's version
            // last of those not waited for): in a group, a failure is the failing save's own,
            // not thrown by the next save's first wait.
            if try mismatch(storedHash, schema: schema) == nil { session.memo?.checkedSchema = schema.versionHash }
            return result
        } catch {
            if let mismatch = try? mismatch(storedHash, schema: schema) { throw mismatch }
            throw error
        }
    }

    /// The `schemaMismatch` error when the store's schema is not the one this save was planned on.
    private func mismatch(_ storedHash: PendingStatement?) throws -> ModelError? {
        try Self.mismatch(storedHash, schema: schema)
    }

    /// The `schemaMismatch` error when the store's schema, as `storedHash` answers, is not `schema`.
    static func mismatch(_ storedHash: PendingStatement?, schema: ResolvedSchema) throws -> ModelError? {
        guard let stored = try storedHash?.rows().first.flatMap({ try $0.first.flatMap(PostgresValues.text) }),
            stored != schema.versionHash
        else { return nil }
        return ModelError(
            .schemaMismatch,
            "the store was migrated to schema version \(stored.prefix(12)) after this process read its schema (version \(schema.versionHash.prefix(12))); nothing was saved: open the store again with the new schema",
            context: ["storeVersion": stored, "requestedVersion": schema.versionHash, "staleSchema": "true"])
    }

    private func save(checking storedHash: PendingStatement?) throws -> SaveResult {
        let reads = try PostgresStoredRows(
            for: changes, layout: layout, session: session, metadata: metadata, storeIdentifier: storeIdentifier)
        let conflicts = try ExpectedVersions.conflicts(in: changes, reads: reads)
        if !conflicts.isEmpty {
            let objects = PostgresObjects(session: session, layout: layout, storeIdentifier: storeIdentifier)
            var current: [ObjectRef: ObjectSnapshot] = [:]
            for conflict in conflicts {
                guard let ref = conflict.ref else { continue }
                current[ref] = try objects.objects(root: ref.root, keys: [ref.key]).first
            }
            throw SaveConflicts(
                conflicts.map { conflict in
                    SaveConflicts.Conflict(
                        id: conflict.id, expectedVersion: conflict.expected,
                        current: conflict.ref.flatMap { current[$0] })
                })
        }
        let plan = try ChangeSetPlan(changes, reads: reads, isOverlay: false)
        guard !plan.isEmpty else { return SaveResult() }
        var resolver = UniquenessResolver(reads: reads, plan: plan)
        let merges = try resolver.resolve(policy: changes.uniquenessPolicy)
        let writes = try SaveWrites(plan, merges: merges, reads: reads)
        guard !writes.history.isEmpty else { return SaveResult() }
        if let mismatch = try mismatch(storedHash) { throw mismatch }
        for (root, key) in writes.lastKeys { try metadata.setSequence(root, to: key, session) }
        try apply(writes)
        var result = writes.result
        result.token = try recordHistory(writes.history)
        return result
    }

    /// Deletes (with their join rows), updates (unique columns they change cleared first),
    /// inserts, then join rows; sent without waiting (the history record waits for them).
    private func apply(_ writes: SaveWrites) throws {
        for (ref, _) in writes.deletes {
            try session.send("DELETE FROM \(layout.qualified(ref.root)) WHERE \"_pk\" = $1", [.int(ref.key)])
            for join in schema.joinTables {
                if join.sourceRoot == ref.root {
                    try session.send(
                        "DELETE FROM \(layout.qualified(join.name)) WHERE \"source\" = $1", [.int(ref.key)])
                }
                if join.targetRoot == ref.root {
                    try session.send(
                        "DELETE FROM \(layout.qualified(join.name)) WHERE \"target\" = $1", [.int(ref.key)])
                }
            }
        }
        for update in writes.updated {
            let unique = Set(update.entity.uniqueConstraints.flatMap { $0 })
            let clearing = update.values.keys.filter(unique.contains).sorted()
            guard !clearing.isEmpty else { continue }
            try session.send(
                "UPDATE \(layout.qualified(update.ref.root)) SET \(clearing.map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ")) WHERE \"_pk\" = $1",
                [.int(update.ref.key)])
        }
        for update in writes.updated {
            let columns = PostgresLayout.withFoldedForms(
                update.values.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, of: update.entity)
            let sets =
                columns.enumerated().map { "\(SQL.quote($1.0)) = $\($0 + 2)" }
                + ["\"_version\" = \"_version\" + 1"]
            try session.send(
                "UPDATE \(layout.qualified(update.ref.root)) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = $1",
                [.int(update.ref.key)] + columns.map(\.1))
        }
        for insert in writes.inserted {
            guard let entity = schema[insert.entity] else { continue }
            let names =
                entity.attributes.map(\.name) + entity.relationships.filter { $0.storage == .foreignKey }.map(\.name)
            let columns = PostgresLayout.withFoldedForms(names.map { ($0, insert.values[$0] ?? .null) }, of: entity)
            let all = ["_pk", "_entity", "_version"] + columns.map(\.0)
            try session.send(
                "INSERT INTO \(layout.qualified(entity.root)) (\(all.map(SQL.quote).joined(separator: ", "))) VALUES (\((1...all.count).map { "$\($0)" }.joined(separator: ", ")))",
                [.int(insert.ref.key), .string(insert.entity), .int(1)] + columns.map(\.1))
        }
        let deleted = Set(writes.deletes.map(\.ref))
        for join in writes.joins where !deleted.contains(join.source) && !deleted.contains(join.target) {
            let sql =
                join.present
                ? "INSERT INTO \(layout.qualified(join.table)) VALUES ($1, $2) ON CONFLICT DO NOTHING"
                : "DELETE FROM \(layout.qualified(join.table)) WHERE \"source\" = $1 AND \"target\" = $2"
            try session.send(sql, [.int(join.source.key), .int(join.target.key)])
        }
    }

    /// One history transaction with the next token, its changes, and a notification on the
    /// store's channel carrying the token, in one statement (one round trip). The token comes
    /// from the history sequence's row, locked until this transaction commits: tokens commit in
    /// their order, so a follower reading after token N never misses one that commits later.
    private func recordHistory(_ history: [HistoryChange]) throws -> HistoryToken {
        var rows: [String] = []
        for (offset, change) in history.enumerated() {
            let (changed, tombstone) = try StoredHistory.columns(of: change)
            rows.append(
                "{\"position\":\(offset + 1),\"kind\":\(JSONText.string(change.kind.rawValue)),\"entity\":\(JSONText.string(change.id.entityName)),\"pk\":\(change.id.primaryKey ?? 0),\"changed\":\(changed.map(JSONText.string) ?? "null"),\"tombstone\":\(tombstone.map(JSONText.string) ?? "null")}"
            )
        }
        return try Self.recordHistory(
            changes: "[" + rows.joined(separator: ",") + "]", author: changes.author, user: changes.user,
            session: session, metadata: metadata)
    }

    /// ``recordHistory(_:)`` of the changes given as a JSON array of objects with their
    /// `position`, `kind`, `entity`, `pk`, `changed` and `tombstone`. Alone, one statement takes
    /// the next token, records the transaction and notifies followers, and is waited for (its
    /// answer is the token). In a group (``GroupMemo``), the history sequence is read and locked
    /// once and each save's token is the memo's next; the sequence is written back, and
    /// followers notified of the group's last token, just before the COMMIT
    /// (``PostgresGroupWriter/commit(_:)``).
    static func recordHistory(
        changes: String, author: String?, user: String?, session: PostgresSession, metadata: PostgresMetadata
    ) throws -> HistoryToken {
        let timestamp = Value.int(Timestamp(Date()).microsecondsSince1970)
        if let memo = session.memo {
            let token = try metadata.lockedSequence(PostgresMetadata.historySequence, session) + 1
            memo.set(PostgresMetadata.historySequence, to: token)
            // Waited for, as the statement alone is: every statement of the save has answered
            // when it returns, so a failure is this save's own, not the next one's or the
            // group's COMMIT's.
            try session.query(
                """
                WITH recorded AS (INSERT INTO \(metadata.transactionTable) VALUES ($1, $2, $3, $5)) \
                INSERT INTO \(metadata.changeTable) SELECT $1, c."position", c."kind", c."entity", c."pk", \
                c."changed", c."tombstone" FROM json_to_recordset($4::json) AS c("position" bigint, "kind" text, \
                "entity" text, "pk" bigint, "changed" text, "tombstone" text)
                """,
                [
                    .int(token), timestamp, author.map(Value.string) ?? .null, .string(changes),
                    user.map(Value.string) ?? .null,
                ])
            return HistoryToken(token)
        }
        let sequence = metadata.sequenceTable
        let answer = try session.query(
            """
            WITH token AS (INSERT INTO \(sequence) VALUES ('\(PostgresMetadata.historySequence)', 1) ON CONFLICT ("name") \
            DO UPDATE SET "value" = \(sequence)."value" + 1 RETURNING "value"), \
            recorded AS (INSERT INTO \(metadata.transactionTable) SELECT "value", $1, $2, $5 FROM token), \
            changed AS (INSERT INTO \(metadata.changeTable) SELECT token."value", c."position", c."kind", c."entity", \
            c."pk", c."changed", c."tombstone" FROM token, json_to_recordset($3::json) AS c("position" bigint, \
            "kind" text, "entity" text, "pk" bigint, "changed" text, "tombstone" text)) \
            SELECT "value", pg_notify($4, "value"::text) FROM token
            """,
            [
                timestamp, author.map(Value.string) ?? .null, .string(changes), .string(metadata.channel),
                user.map(Value.string) ?? .null,
            ])
        guard let token = try answer.first.flatMap({ try $0.first.flatMap(PostgresValues.int) }) else {
            throw ModelError(
                .storageFailure, "the history sequence of the PostgreSQL schema '\(metadata.namespace)' is unreadable")
        }
        return HistoryToken(token)
    }
}

extension PostgresMetadata {
    /// The store's notification channel (``channel(of:)`` of its namespace).
    var channel: String { Self.channel(of: storeNamespace) }

    /// The notification channel of the store in `namespace`: `modeld.<namespace>` when that fits
    /// PostgreSQL's 63 bytes of an identifier (a namespace of up to 56 characters, as before
    /// longer ones were taken); for a longer one, which `pg_notify` would refuse, its first 39
    /// characters, `.` and 16 hex digits of its 64-bit FNV-1a hash: 63 bytes, the same in every
    /// daemon, and two namespaces of one database share a channel only if their hashes collide
    /// (which costs a follower nothing but a needless read of history).
    static func channel(of namespace: String) -> String {
        let plain = "modeld." + namespace
        guard plain.utf8.count > PostgresEndpoint.maximumIdentifierLength else { return plain }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in namespace.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let digits = String(hash, radix: 16)
        return "modeld." + namespace.prefix(39) + "." + String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The name of the history tokens' sequence (a row of the sequence table).
    static let historySequence = "_history"

    /// Tells followers (``PostgresStore/followChanges(listening:_:)``) of history up to `token`,
    /// at the commit of the transaction it is sent in (sent without waiting).
    func notify(upTo token: Int64, _ session: PostgresSession) throws {
        try session.send("SELECT pg_notify($1, $2)", [.string(channel), .string(String(token))])
    }
}
