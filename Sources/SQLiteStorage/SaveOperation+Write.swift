import ModelCore

extension SaveOperation {
    /// What steps 4 to 7 write, computed before any SQL runs.
    struct Writes {
        /// New rows: entity and column values (attributes and foreign keys), by key.
        var inserted: [(ref: ObjectRef, entity: String, values: [String: Value])] = []
        /// Column values to set on saved objects, in the order history records them.
        var updated: [(ref: ObjectRef, entity: ResolvedEntity, values: [String: Value])] = []
        var changedProperties: [ObjectRef: Set<String>] = [:]
        /// Join-table rows to add (`present`) or remove, in order.
        var joins: [(table: String, source: ObjectRef, target: ObjectRef, present: Bool)] = []
    }

    /// Steps 4 to 8: allocates keys (after each hierarchy's sequence, in change-set order),
    /// remaps temporary identifiers, writes deletes, updates and inserts with their relationship
    /// changes (stored side only), versions and the history transaction.
    func write(_ plan: ChangeSetPlan, merges: [Int: ChangeSetPlan.Participant], stored: StoredRows) throws -> SaveResult {
        /// Where the `index`th insert merges (an upsert), if it does.
        func merged(_ index: Int) -> ChangeSetPlan.Participant? { merges.isEmpty ? nil : merges[index] }
        var keys = [ObjectRef?](repeating: nil, count: plan.inserts.count)
        var sequences: [String: Int64] = [:]
        // Inserts come in runs of one hierarchy: its sequence is kept at hand for the next.
        var run: (root: String, key: Int64)?
        // Loops over the inserts go by index: a loop over the values would copy each one.
        for index in plan.inserts.indices where merged(index) == nil {
            let root = plan.inserts[index].entity.root
            let key: Int64
            if let run, run.root == root {
                key = run.key + 1
            } else {
                if let run { sequences[run.root] = run.key }
                key = try (sequences[root] ?? StoreMetadata.sequence(root, connection)) + 1
            }
            run = (root, key)
            keys[index] = ObjectRef(root: root, key: key)
        }
        if let run { sequences[run.root] = run.key }
        for (root, value) in sequences { try StoreMetadata.setSequence(root, to: value, connection) }
        func ref(_ participant: ChangeSetPlan.Participant) -> ObjectRef? {
            switch participant {
            case .stored(let ref): ref
            case .inserted(let index): merged(index).flatMap(ref) ?? keys[index]
            }
        }

        var writes = Writes()
        writes.inserted.reserveCapacity(plan.inserts.count)
        // Where each new row is among the inserted ones: for merges and links (a plain insert
        // is its own row, in order).
        let indexesInserts = !merges.isEmpty || plan.inserts.contains { !$0.links.isEmpty } || plan.updates.contains { !$0.links.isEmpty }
        var insertedIndex: [ObjectRef: Int] = [:], updatedIndex: [ObjectRef: Int] = [:]
        if indexesInserts { insertedIndex.reserveCapacity(plan.inserts.count) }
        func update(_ ref: ObjectRef, _ values: [String: Value], _ properties: [String]) {
            if updatedIndex[ref] == nil, let row = stored.rows[ref], let entity = schema[row.entity] {
                updatedIndex[ref] = writes.updated.count
                writes.updated.append((ref, entity, [:]))
            }
            guard let index = updatedIndex[ref] else { return }
            let entity = writes.updated[index].entity
            for (name, value) in values where entity.attribute(name) != nil { writes.updated[index].values[name] = value }
            writes.changedProperties[ref, default: []].formUnion(properties)
        }
        for index in plan.inserts.indices {
            guard let target = merged(index) else {
                if let ref = keys[index] {
                    if indexesInserts { insertedIndex[ref] = writes.inserted.count }
                    writes.inserted.append((ref, plan.inserts[index].entity.name, plan.inserts[index].attributes))
                }
                continue
            }
            let insert = plan.inserts[index]
            guard let ref = ref(target) else { continue }
            if let row = insertedIndex[ref] {
                let entity = schema[writes.inserted[row].entity]
                for (name, value) in insert.given where entity?.attribute(name) != nil { writes.inserted[row].values[name] = value }
            } else {
                update(ref, insert.given, insert.changedProperties)
            }
        }
        for change in plan.updates { update(change.ref, change.attributes, change.changedProperties) }

        func link(_ links: [ChangeSetPlan.Link], owner: ObjectRef) {
            for link in links where link.relationship.isStoredHere {
                switch (link.relationship.storage, link.kind) {
                case (.foreignKey, .toOne(let target)):
                    let value = target.flatMap(ref).map { Value.int($0.key) } ?? .null
                    if let row = insertedIndex[owner] { writes.inserted[row].values[link.relationship.name] = value }
                    if let row = updatedIndex[owner] { writes.updated[row].values[link.relationship.name] = value }
                case (.joinTable(let table, _), .toMany(let added, let removed)):
                    for target in removed.compactMap(ref) { writes.joins.append((table.name, owner, target, false)) }
                    for target in added.compactMap(ref) { writes.joins.append((table.name, owner, target, true)) }
                default:
                    continue
                }
            }
        }
        for index in plan.inserts.indices where !plan.inserts[index].links.isEmpty {
            if let owner = ref(.inserted(index)) { link(plan.inserts[index].links, owner: owner) }
        }
        for change in plan.updates { link(change.links, owner: change.ref) }

        var result = SaveResult()
        result.remappedIdentifiers.reserveCapacity(plan.inserts.count)
        result.versions.reserveCapacity(writes.inserted.count + writes.updated.count)
        for index in plan.inserts.indices {
            guard let target = ref(.inserted(index)) else { continue }
            let inserted = plan.inserts[index].entity.name
            // A new row is of the insert's entity; a merged insert is of the row it merged into.
            let entity = merged(index) == nil ? inserted
                : insertedIndex[target].map { writes.inserted[$0].entity } ?? stored.rows[target]?.entity ?? inserted
            result.remappedIdentifiers[plan.inserts[index].id] = permanent(entity, target.key)
        }
        let deleted = Set(plan.deletes)
        for row in writes.inserted { result.versions[permanent(row.entity, row.ref.key)] = 1 }
        for row in writes.updated where !deleted.contains(row.ref) {
            if let version = stored.rows[row.ref]?.version { result.versions[permanent(row.entity.name, row.ref.key)] = version + 1 }
        }
        let tombstones = try apply(writes, deletes: plan.deletes, stored: stored)
        result.token = try recordHistory(writes, tombstones: tombstones, deleted: deleted, stored: stored)
        return result
    }

    /// Runs the SQL: deletes (with their join-table rows), updates (the unique columns they change
    /// cleared first, so values moving between objects don't trip a unique index halfway), inserts,
    /// then join-table rows. Returns the tombstones of the deleted objects.
    private func apply(_ writes: Writes, deletes: [ObjectRef], stored: StoredRows) throws -> [(ObjectRef, [String: Value])] {
        var tombstones: [(ObjectRef, [String: Value])] = []
        for ref in deletes {
            guard let entity = stored.rows[ref].flatMap({ schema[$0.entity] }) else { continue }
            let table = layout.table(root: ref.root)
            let preserved = entity.preservedAttributes
            var values: [String: Value] = [:]
            if !preserved.isEmpty {
                try connection.query("SELECT \(preserved.map { SQL.quote($0.name) }.joined(separator: ", ")) FROM \(table.quoted) WHERE \"_pk\" = ?1",
                                     [.int(ref.key)]) { row in
                    for (index, attribute) in preserved.enumerated() { values[attribute.name] = try row.value(Int32(index), as: attribute.type) }
                }
            }
            tombstones.append((ref, values))
            try connection.run("DELETE FROM \(table.quoted) WHERE \"_pk\" = ?1", [.int(ref.key)])
            for join in schema.joinTables {
                if join.sourceRoot == ref.root { try connection.run("DELETE FROM \(SQL.quote(join.name)) WHERE \"source\" = ?1", [.int(ref.key)]) }
                if join.targetRoot == ref.root { try connection.run("DELETE FROM \(SQL.quote(join.name)) WHERE \"target\" = ?1", [.int(ref.key)]) }
            }
        }
        let deleted = Set(deletes)
        let updates = writes.updated.filter { !deleted.contains($0.ref) }
        for update in updates {
            let unique = Set(update.entity.uniqueConstraints.flatMap { $0 })
            let clearing = update.values.keys.filter(unique.contains).sorted()
            guard !clearing.isEmpty else { continue }
            try connection.run("UPDATE \(layout.table(root: update.ref.root).quoted) SET \(clearing.map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                               [.int(update.ref.key)])
        }
        for update in updates {
            let columns = update.values.sorted { $0.key < $1.key }
            let sets = columns.enumerated().map { "\(SQL.quote($1.key)) = ?\($0 + 2)" } + ["\"_version\" = \"_version\" + 1"]
            try connection.run("UPDATE \(layout.table(root: update.ref.root).quoted) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                               [.int(update.ref.key)] + columns.map(\.value))
        }
        // One statement per run of inserts of one entity (a whole batch, usually).
        var rest = writes.inserted[...]
        while let first = rest.first {
            let end = rest.firstIndex { $0.entity != first.entity } ?? rest.endIndex
            let run = rest[..<end]
            rest = rest[end...]
            guard let entity = schema[first.entity] else { continue }
            let (sql, columns) = layout.insertStatement(for: entity)
            try connection.runEach(sql, over: run) { insert, statement in
                try statement.bind(.int(insert.ref.key), at: 1)
                try statement.bind(.string(insert.entity), at: 2)
                try statement.bind(.int(1), at: 3)
                for (offset, column) in columns.enumerated() {
                    try statement.bind(insert.values[column] ?? .null, at: Int32(offset + 4))
                }
            }
        }
        for join in writes.joins where !deleted.contains(join.source) && !deleted.contains(join.target) {
            let sql = join.present ? "INSERT OR IGNORE INTO \(SQL.quote(join.table)) VALUES (?1, ?2)"
                                   : "DELETE FROM \(SQL.quote(join.table)) WHERE \"source\" = ?1 AND \"target\" = ?2"
            try connection.run(sql, [.int(join.source.key), .int(join.target.key)])
        }
        return tombstones
    }
}
