import Foundation
import ModelCore
import ModelStorage

/// What a save reads of the stored objects (``SaveReads``), inside its transaction. The rows of
/// every saved object the change set updates, deletes or links to are read up front and locked
/// (`FOR UPDATE`): a save through another daemon that changes one of them waits for this one to
/// commit, then reads the new version — so optimistic concurrency holds across hosts. A key
/// sequence is locked the same way when the save takes keys from it.
struct PostgresStoredRows: SaveReads {
    let layout: PostgresLayout
    let session: PostgresSession
    let metadata: PostgresMetadata
    let storeIdentifier: UUID
    /// Whether rows and sequences are locked: a save's reads are, an overlay's are not.
    let locking: Bool
    private(set) var rows: [ObjectRef: StoredObject] = [:]

    var schema: ResolvedSchema { layout.schema }

    init(
        for changes: ChangeSet, layout: PostgresLayout, session: PostgresSession, metadata: PostgresMetadata,
        storeIdentifier: UUID, locking: Bool = true
    ) throws {
        self.locking = locking
        self.layout = layout
        self.session = session
        self.metadata = metadata
        self.storeIdentifier = storeIdentifier
        // Hierarchies in name order, keys in order: two saves lock rows in the same order.
        for (root, rootKeys) in changes.savedKeysByRoot(in: layout.schema).sorted(by: { $0.key < $1.key }) {
            for row in try session.query(
                "SELECT \"_pk\", \"_entity\", \"_version\" FROM \(layout.qualified(root)) WHERE \"_pk\" = ANY($1) ORDER BY \"_pk\"\(locking ? " FOR UPDATE" : "")",
                keys: rootKeys.sorted())
            {
                let cells = Array(row)
                guard let key = try PostgresValues.int(cells[0]), let entity = try PostgresValues.text(cells[1]),
                    let version = try PostgresValues.int(cells[2])
                else { continue }
                rows[ObjectRef(root: root, key: key)] = StoredObject(entity: entity, version: version)
            }
        }
    }

    func storedObject(_ ref: ObjectRef) throws -> StoredObject? {
        if let row = rows[ref] { return row }
        let found = try session.query(
            "SELECT \"_entity\", \"_version\" FROM \(layout.qualified(ref.root)) WHERE \"_pk\" = $1\(locking ? " FOR UPDATE" : "")",
            [.int(ref.key)])
        guard let cells = found.first.map(Array.init), let entity = try PostgresValues.text(cells[0]),
            let version = try PostgresValues.int(cells[1])
        else { return nil }
        return StoredObject(entity: entity, version: version)
    }

    /// Through the constraint's unique index.
    func objects(root: String, constraint attributes: [String], equalTo values: [Value]) throws -> [ObjectRef] {
        var conditions = attributes.enumerated().map { "\(SQL.quote($1)) = $\($0 + 1)" }
        if let scope = layout.constraintScope(attributes, in: layout.table(root: root)) {
            conditions.append(scope)
        }
        return try session.query(
            "SELECT \"_pk\" FROM \(layout.qualified(root)) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \"_pk\"",
            values
        ).compactMap { row in try row.first.flatMap(PostgresValues.int).map { ObjectRef(root: root, key: $0) } }
    }

    func values(of ref: ObjectRef, _ attributes: [AttributeDescription]) throws -> [String: Value] {
        guard !attributes.isEmpty else { return [:] }
        let rows = try session.query(
            "SELECT \(attributes.map { SQL.quote($0.name) }.joined(separator: ", ")) FROM \(layout.qualified(ref.root)) WHERE \"_pk\" = $1",
            [.int(ref.key)])
        guard let cells = rows.first.map(Array.init) else { return [:] }
        var values: [String: Value] = [:]
        for (index, attribute) in attributes.enumerated() {
            values[attribute.name] = try PostgresValues.value(cells[index], as: attribute.type)
        }
        return values
    }

    /// The sequence's last key, its row locked until the save commits (when locking).
    func lastKey(of root: String) throws -> Int64 {
        locking ? try metadata.lockedSequence(root, session) : try metadata.sequence(root, session)
    }
}

extension PostgresMetadata {
    /// The last value the sequence `name` handed out (0 when none).
    func sequence(_ name: String, _ session: PostgresSession) throws -> Int64 {
        let rows = try session.query("SELECT \"value\" FROM \(sequenceTable) WHERE \"name\" = $1", [.string(name)])
        return try rows.first.flatMap { try $0.first.flatMap(PostgresValues.int) } ?? 0
    }

    /// The last value the sequence `name` handed out (0 when none), its row locked until the
    /// transaction ends: read once a group (``GroupMemo``).
    func lockedSequence(_ name: String, _ session: PostgresSession) throws -> Int64 {
        if let value = session.memo?.value(of: name) { return value }
        try session.send("INSERT INTO \(sequenceTable) VALUES ($1, 0) ON CONFLICT DO NOTHING", [.string(name)])
        let rows = try session.query(
            "SELECT \"value\" FROM \(sequenceTable) WHERE \"name\" = $1 FOR UPDATE", [.string(name)])
        let value = try rows.first.flatMap { try $0.first.flatMap(PostgresValues.int) } ?? 0
        session.memo?.read(name, value)
        return value
    }

    /// Records that the sequence `name` handed out every value up to `value`: in a group, once
    /// before it commits (``GroupMemo``).
    func setSequence(_ name: String, to value: Int64, _ session: PostgresSession) throws {
        if let memo = session.memo { return memo.set(name, to: value) }
        try writeSequence(name, to: value, session)
    }

    /// Writes the sequence's value (sent without waiting: the transaction's next statement
    /// waited for fails if this did).
    func writeSequence(_ name: String, to value: Int64, _ session: PostgresSession) throws {
        try session.send(
            "INSERT INTO \(sequenceTable) VALUES ($1, $2) ON CONFLICT (\"name\") DO UPDATE SET \"value\" = excluded.\"value\"",
            [.string(name), .int(value)])
    }

    /// The next history token, taken in the transaction that records it: the sequence's row
    /// stays locked until that transaction commits, so tokens commit in their order and a
    /// follower reading after token N never misses one that commits later.
    func nextHistoryToken(_ session: PostgresSession) throws -> Int64 {
        let rows = try session.query(
            "INSERT INTO \(sequenceTable) VALUES ('\(Self.historySequence)', 1) ON CONFLICT (\"name\") DO UPDATE SET \"value\" = \(sequenceTable).\"value\" + 1 RETURNING \"value\""
        )
        guard let token = try rows.first.flatMap({ try $0.first.flatMap(PostgresValues.int) }) else {
            throw ModelError(
                .storageFailure, "the history sequence of the PostgreSQL schema '\(namespace)' is unreadable")
        }
        return token
    }
}
