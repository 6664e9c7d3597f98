import ModelCore
import ModelStorage

extension ModelContainer {
    /// Saves `runs` (plain inserts, their values by column) as one save, when every object in
    /// them is fit to save as it is: of an entity that can be inserted and needs no relationship,
    /// naming its attributes only, each value of its attribute's type or converting to it, every
    /// required attribute given a value or a default. Then what ``saveInserts(_:author:uniquenessPolicy:)``
    /// would save is saved, in one history transaction, but a backend that can (SQLite) writes
    /// the rows straight from the runs (``StorageBackend/saveInsertRuns(_:author:user:)``), and
    /// the objects come back as ``SaveResult/insertedRuns``.
    ///
    /// Returns nil, having done nothing, for no runs or when any object is not fit: the caller
    /// then saves the same inserts the general way, which refuses them with the error it always
    /// gave, naming the change at fault.
    public nonisolated(nonsending) func saveInsertRuns(
        _ runs: [InsertRun], author: String?, uniquenessPolicy: UniquenessPolicy
    ) async throws -> SaveResult? {
        guard !runs.isEmpty else { return nil }
        var prepared: [InsertRun] = []
        prepared.reserveCapacity(runs.count)
        for run in runs {
            guard let complete = completed(run) else { return nil }
            prepared.append(complete)
        }
        if let result = try await backend.saveInsertRuns(prepared, author: author, user: ChangeSet.savingUser) {
            return result
        }
        // A backend without its own way: the objects as inserts, with temporary identifiers.
        var changes = ChangeSet(author: author, uniquenessPolicy: uniquenessPolicy)
        changes.inserts.reserveCapacity(prepared.reduce(0) { $0 + $1.count })
        for run in prepared {
            for index in 0..<run.count {
                changes.inserts.append(
                    InsertedObject(
                        id: .temporary(storeIdentifier: storeIdentifier, entityName: run.entityName),
                        attributes: run.attributes(ofRow: index)))
            }
        }
        do {
            return try await backend.save(changes)
        } catch is SaveConflicts {
            // Inserts alone conflict with no version read; should a store say otherwise, the
            // general way resolves it.
            return nil
        }
    }

    /// `run` with a column per attribute of its entity, in the entity's order: its values
    /// converted to their attributes' types (as ``convert(_:for:)`` does), defaults (or null)
    /// for the attributes it does not name. Nil when any object is not fit to save (see
    /// ``saveInsertRuns(_:author:uniquenessPolicy:)``).
    func completed(_ run: InsertRun) -> InsertRun? {
        guard let entity = try? insertableEntity(run.entityName), Self.needsNoRelationship(entity) else { return nil }
        // Where each attribute's value is in the run's rows; nil: not given.
        var sources = [Int?](repeating: nil, count: entity.attributes.count)
        for (column, name) in run.columns.enumerated() {
            guard let index = entity.attributes.firstIndex(where: { $0.name == name }) else { return nil }
            sources[index] = column
        }
        if Self.isComplete(run, attributes: entity.attributes, sources: sources) { return run }
        var complete = InsertRun(entityName: entity.name, columns: entity.attributes.map(\.name))
        complete.reserveCapacity(objects: run.count)
        var row: [Value] = []
        row.reserveCapacity(entity.attributes.count)
        for index in 0..<run.count {
            let given = run.row(index)
            row.removeAll(keepingCapacity: true)
            for (attribute, source) in zip(entity.attributes, sources) {
                var value = attribute.defaultValue ?? .null
                if let source {
                    let original = given[given.startIndex + source]
                    guard let converted = try? original.converted(to: attribute.type) else { return nil }
                    if case .json(let text) = converted, Value(parsing: text, as: .json) == nil { return nil }
                    value = converted
                }
                guard attribute.isOptional || !value.isNull else { return nil }
                row.append(value)
            }
            complete.append(row: row)
        }
        return complete
    }

    /// Whether `run` is already what ``completed(_:)`` would make of it, but for its columns'
    /// order (the backends find each attribute's column by name): every attribute named, each
    /// value of its attribute's type (not JSON, which is parsed to be checked, nor a NaN or
    /// negative zero, which conversion refuses or makes zero), null only where optional. What a
    /// bulk load sends; checked value by value without copying any.
    private static func isComplete(_ run: InsertRun, attributes: [AttributeDescription], sources: [Int?]) -> Bool {
        // Each column's attribute's type and optionality, in the run's column order.
        var byColumn = [(type: AttributeType, isOptional: Bool)?](repeating: nil, count: run.columns.count)
        for (attribute, source) in zip(attributes, sources) {
            guard let source, attribute.type != .json else { return false }
            byColumn[source] = (attribute.type, attribute.isOptional)
        }
        let columns = byColumn.compactMap { $0 }
        guard columns.count == run.columns.count else { return false }
        return run.values.withUnsafeBufferPointer { values in
            var column = 0
            for value in values {
                let (type, isOptional) = columns[column]
                column = column + 1 == columns.count ? 0 : column + 1
                switch value {
                case .null: guard isOptional else { return false }
                case .double(let d): guard type == .double, !d.isNaN, d != 0 || d.sign == .plus else { return false }
                default: guard value.type == type else { return false }
                }
            }
            return true
        }
    }

    /// Whether an object of `entity` may be saved without relationships: none is a required
    /// to-one or a to-many with a minimum.
    private static func needsNoRelationship(_ entity: ResolvedEntity) -> Bool {
        entity.relationships.allSatisfy { relationship in
            relationship.isToMany ? (relationship.minCount ?? 0) == 0 : relationship.isOptional
        }
    }
}
