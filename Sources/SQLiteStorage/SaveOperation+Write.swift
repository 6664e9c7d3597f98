import ModelCore

extension SaveOperation {
    /// An object the save updates in place: a regular update, or an insert upserted into a
    /// saved object.
    struct StoredChange {
        let ref: ObjectRef
        let entity: ResolvedEntity
        let values: [String: Value]
        let links: [ChangeSetPlan.Links]
    }

    /// Step 4: keys for the inserts, after each hierarchy's sequence, in change-set order; every
    /// temporary identifier maps to its permanent one (an upserted insert's to its target's).
    func allocateKeys() throws {
        var next: [String: Int64] = [:]
        for (index, insert) in plan.inserts.enumerated() where upserts[index] == nil {
            let root = insert.entity.root
            let key = try (next[root] ?? StoreMetadata.sequence(root, connection)) + 1
            next[root] = key
            assign(insert.id, key: key, entity: insert.entity.name)
            result.versions[permanent(insert.entity.name, key)] = 1
        }
        for (root, value) in next { try StoreMetadata.setSequence(root, to: value, connection) }
        for index in plan.inserts.indices {
            var target = upserts[index]
            while case .insert(let other)? = target, let further = upserts[other] { target = further }
            switch target {
            case nil: continue
            case .stored(let ref, let entity)?:
                assign(plan.inserts[index].id, key: ref.key, entity: entity)
            case .insert(let other)?:
                let otherID = plan.inserts[other].id
                if let key = key(of: otherID), let mapped = result.remappedIdentifiers[otherID] {
                    assign(plan.inserts[index].id, key: key, entity: mapped.entityName)
                }
            }
        }
    }

    private func assign(_ id: PersistentIdentifier, key: Int64, entity: String) {
        if case .temporary(let uuid) = id.key { temporaryKeys[uuid] = key }
        result.remappedIdentifiers[id] = permanent(entity, key)
    }

    func permanent(_ entity: String, _ key: Int64) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }

    /// Step 5 and 6: deletes (with their join-table rows), then updates (unique columns they
    /// change cleared first, so a swap of values between objects does not trip the unique
    /// index halfway), then inserts; versions start at 1 and grow by one per saved object.
    func write() throws {
        var deleted = Set<ObjectRef>()
        for delete in plan.deletes {
            guard let (ref, row) = existing(delete.id), deleted.insert(ref).inserted, let entity = schema[row.entity] else { continue }
            tombstones.append((permanent(row.entity, ref.key), try tombstone(of: ref, entity: entity)))
            let table = layout.table(root: ref.root)
            try connection.run("DELETE FROM \(table.quoted) WHERE \"_pk\" = ?1", [.int(ref.key)])
            for join in schema.joinTables {
                if join.sourceRoot == ref.root { try connection.run("DELETE FROM \(SQL.quote(join.name)) WHERE \"source\" = ?1", [.int(ref.key)]) }
                if join.targetRoot == ref.root { try connection.run("DELETE FROM \(SQL.quote(join.name)) WHERE \"target\" = ?1", [.int(ref.key)]) }
            }
        }
        self.deleted = deleted

        let changes = storedChanges.filter { !deleted.contains($0.ref) }
        for change in changes {
            let unique = Set(constraints(of: change.entity).flatMap(\.attributes))
            let clearing = change.values.keys.filter(unique.contains).sorted()
            guard !clearing.isEmpty else { continue }
            let sets = clearing.map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ")
            try connection.run("UPDATE \(layout.table(root: change.ref.root).quoted) SET \(sets) WHERE \"_pk\" = ?1", [.int(change.ref.key)])
        }
        var bumped = Set<ObjectRef>()
        for change in changes {
            let columns = assignments(change.values, change.links)
            let firstChange = bumped.insert(change.ref).inserted
            var sets = columns.enumerated().map { "\(SQL.quote($1.name)) = ?\($0 + 2)" }
            if firstChange { sets.append("\"_version\" = \"_version\" + 1") }
            if !sets.isEmpty {
                try connection.run("UPDATE \(layout.table(root: change.ref.root).quoted) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = ?1",
                                   [.int(change.ref.key)] + columns.map(\.value))
            }
            try link(change.ref.key, change.links)
            if firstChange, let version = stored[change.ref]?.version {
                result.versions[permanent(change.entity.name, change.ref.key)] = version + 1
            }
        }
        for (index, insert) in plan.inserts.enumerated() where upserts[index] == nil {
            guard let key = key(of: insert.id) else { continue }
            let columns = [(name: "_pk", value: Value.int(key)), ("_entity", .string(insert.entity.name)), ("_version", .int(1))]
                + assignments(insertValues[index], insertLinks[index])
            let names = columns.map { SQL.quote($0.name) }.joined(separator: ", ")
            let parameters = (1...columns.count).map { "?\($0)" }.joined(separator: ", ")
            try connection.run("INSERT INTO \(layout.table(for: insert.entity).quoted) (\(names)) VALUES (\(parameters))", columns.map(\.value))
            try link(key, insertLinks[index])
        }
    }

    /// Regular updates, then inserts upserted into saved objects, in change-set order.
    var storedChanges: [StoredChange] {
        var changes: [StoredChange] = []
        for index in plan.inserts.indices {
            guard case .stored(let ref, let entityName)? = upserts[index], let entity = schema[entityName] else { continue }
            changes.append(StoredChange(ref: ref, entity: entity, values: insertValues[index], links: insertLinks[index]))
        }
        for update in plan.updates {
            guard let (ref, row) = existing(update.id), let entity = schema[row.entity] else { continue }
            changes.append(StoredChange(ref: ref, entity: entity, values: update.values, links: [update.links]))
        }
        return changes
    }

    /// Column assignments: attribute values, then foreign keys (a later link of the same
    /// relationship wins), sorted by column name.
    private func assignments(_ values: [String: Value], _ links: [ChangeSetPlan.Links]) -> [(name: String, value: Value)] {
        var columns = values
        for links in links {
            for (name, target) in links.foreignKeys { columns[name] = target.flatMap(key(of:)).map(Value.int) ?? .null }
        }
        return columns.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
    }

    /// Adds and removes the join-table rows this object owns; rows to objects deleted by this
    /// save are not added.
    private func link(_ owner: Int64, _ links: [ChangeSetPlan.Links]) throws {
        for links in links {
            for (table, added, removed) in links.joins {
                let name = SQL.quote(table.name)
                for target in removed.compactMap(key(of:)) {
                    try connection.run("DELETE FROM \(name) WHERE \"source\" = ?1 AND \"target\" = ?2", [.int(owner), .int(target)])
                }
                for target in added.compactMap(key(of:)) where !deleted.contains(ObjectRef(root: table.targetRoot, key: target)) {
                    try connection.run("INSERT OR IGNORE INTO \(name) VALUES (?1, ?2)", [.int(owner), .int(target)])
                }
            }
        }
    }

    /// The values of `entity`'s `preserveValueOnDeletion` attributes as stored (nil included).
    private func tombstone(of ref: ObjectRef, entity: ResolvedEntity) throws -> [String: Value] {
        let preserved = entity.preservedAttributes
        guard !preserved.isEmpty else { return [:] }
        var values: [String: Value] = [:]
        try connection.query("SELECT \(preserved.map { SQL.quote($0.name) }.joined(separator: ", ")) FROM \(layout.table(root: ref.root).quoted) WHERE \"_pk\" = ?1",
                             [.int(ref.key)]) { row in
            for (index, attribute) in preserved.enumerated() { values[attribute.name] = try row.value(Int32(index), as: attribute.type) }
        }
        return values
    }
}
