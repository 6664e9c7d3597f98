import Foundation
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
        guard let prepared = prepared(runs) else { return nil }
        if let result = try await backend.saveInsertRuns(prepared, author: author, user: ChangeSet.savingUser) {
            return result
        }
        return try await saveAsInserts(prepared, author: author, uniquenessPolicy: uniquenessPolicy)
    }

    /// ``saveInsertRuns(_:author:uniquenessPolicy:)`` for a caller without a task to suspend:
    /// `whenSaved` gets the result, on the thread that committed the save. Returns what gives
    /// the save up; nil, having done nothing, when ``saveInsertRuns(_:author:uniquenessPolicy:)``
    /// would take another way (runs not fit to save as they are, a backend that declines them
    /// or would first wait): the caller then saves them with it, which takes that way.
    public func submitInsertRuns(
        _ runs: [InsertRun], author: String?,
        whenSaved: @escaping @Sendable (Result<SaveResult, any Error>) -> Void
    ) throws -> (@Sendable () -> Void)? {
        guard let prepared = prepared(runs) else { return nil }
        return try backend.submitInsertRuns(prepared, author: author, user: ChangeSet.savingUser, whenSaved: whenSaved)
    }

    /// `runs` completed (``completed(_:)``), or nil for none or any not fit to save as it is.
    private func prepared(_ runs: [InsertRun]) -> [InsertRun]? {
        guard !runs.isEmpty else { return nil }
        // The runs as they came, copied only should one need completing (a bulk load's do not).
        var prepared = runs
        for (index, run) in runs.enumerated() {
            switch completion(of: run) {
            case .complete: break
            case .completed(let complete): prepared[index] = complete
            case .unfit: return nil
            }
        }
        return prepared
    }

    /// Runs saved as inserts with temporary identifiers, for a backend without a way of its own.
    /// A function of its own, so that the usual save of runs does not carry a change set in its
    /// frame (an async call's frame comes from its task's allocator, a slab from malloc when the
    /// task has run out of room).
    @inline(never)
    private nonisolated(nonsending) func saveAsInserts(
        _ prepared: [InsertRun], author: String?, uniquenessPolicy: UniquenessPolicy
    ) async throws -> SaveResult? {
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
        let result: SaveResult
        do {
            result = try await backend.save(changes)
        } catch is SaveConflicts {
            // Inserts alone conflict with no version read; should a store say otherwise, the
            // general way resolves it.
            return nil
        }
        // Runs a backend could have written straight (the memory backend writes none) come back
        // as runs, as that backend's would: a client that asked for runs is answered with them.
        guard (try? InsertRun.areWritableStraight(prepared, in: schema)) == true else { return result }
        return Self.answeredAsRuns(result, inserts: changes.inserts.map(\.id))
    }

    /// `result` with the objects saved for `inserts` (their temporary identifiers, in the order
    /// they were inserted) as ``SaveResult/insertedRuns`` of consecutive keys, rather than a
    /// remapped entry and a version each; `result` as it was should one not have a permanent key.
    static func answeredAsRuns(_ result: SaveResult, inserts: [PersistentIdentifier]) -> SaveResult {
        var runs: [(entity: String, store: UUID, first: Int64, count: Int)] = []
        for temporary in inserts {
            guard let permanent = result.remappedIdentifiers[temporary], case .permanent(let key) = permanent.key else {
                return result
            }
            if let last = runs.last, last.entity == permanent.entityName, last.first + Int64(last.count) == key {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((permanent.entityName, permanent.storeIdentifier, key, 1))
            }
        }
        var answered = result
        for temporary in inserts {
            // Objects of runs are at version 1 without an entry, as a backend's runs are.
            if let permanent = answered.remappedIdentifiers.removeValue(forKey: temporary) {
                answered.versions.removeValue(forKey: permanent)
            }
        }
        answered.insertedRuns += runs.map {
            InsertedRun(storeIdentifier: $0.store, entityName: $0.entity, firstKey: $0.first, count: $0.count)
        }
        return answered
    }

    /// `run` with a column per attribute of its entity, in the entity's order: its values
    /// converted to their attributes' types (as ``convert(_:for:)`` does), defaults (or null)
    /// for the attributes it does not name. Nil when any object is not fit to save (see
    /// ``saveInsertRuns(_:author:uniquenessPolicy:)``).
    func completed(_ run: InsertRun) -> InsertRun? {
        switch completion(of: run) {
        case .complete: run
        case .completed(let complete): complete
        case .unfit: nil
        }
    }

    /// What ``completed(_:)`` makes of a run: nothing (it is complete as it is), another run,
    /// or nothing fit to save.
    enum Completion {
        case complete
        case completed(InsertRun)
        case unfit
    }

    func completion(of run: InsertRun) -> Completion {
        guard let entity = try? insertableEntity(run.entityName), Self.needsNoRelationship(entity) else {
            return .unfit
        }
        let attributes = entity.attributes
        // Where each attribute's value is in the run's rows; -1: not given. Kept on the stack:
        // a one-object save's tables cost it more than its checks.
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: attributes.count) { sources -> Completion in
            _ = sources.initialize(fromContentsOf: repeatElement(-1, count: attributes.count))
            for (column, name) in run.columns.enumerated() {
                // An attribute named twice (a run names each once) is not fit either.
                guard let index = attributes.firstIndex(where: { $0.name == name }), sources[index] < 0 else {
                    return .unfit
                }
                sources[index] = column
            }
            if Self.isComplete(run, attributes: attributes, sources: UnsafeBufferPointer(sources)) { return .complete }
            return Self.converted(run, entity: entity, sources: UnsafeBufferPointer(sources)).map { .completed($0) }
                ?? .unfit
        }
    }

    /// `run` rewritten as ``completed(_:)`` says, `sources` saying where each attribute's value
    /// is in its rows (-1: not given).
    private static func converted(_ run: InsertRun, entity: ResolvedEntity, sources: UnsafeBufferPointer<Int>)
        -> InsertRun?
    {
        var complete = InsertRun(entityName: entity.name, columns: entity.attributes.map(\.name))
        complete.reserveCapacity(objects: run.count)
        var row: [Value] = []
        row.reserveCapacity(entity.attributes.count)
        for index in 0..<run.count {
            let given = run.row(index)
            row.removeAll(keepingCapacity: true)
            for (attribute, source) in zip(entity.attributes, sources) {
                var value = attribute.defaultValue ?? .null
                if source >= 0 {
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
    private static func isComplete(
        _ run: InsertRun, attributes: [AttributeDescription], sources: UnsafeBufferPointer<Int>
    ) -> Bool {
        let width = run.columns.count
        guard attributes.count == width else { return false }
        // Each column's attribute's type and optionality, in the run's column order. As many
        // attributes as columns, each named by a column of its own (`sources` has no repeats):
        // every column gets one.
        return withUnsafeTemporaryAllocation(of: (type: AttributeType, isOptional: Bool).self, capacity: width) {
            columns in
            for (attribute, source) in zip(attributes, sources) {
                guard source >= 0, attribute.type != .json else { return false }
                columns[source] = (attribute.type, attribute.isOptional)
            }
            return run.values.withUnsafeBufferPointer { values in
                var column = 0
                for value in values {
                    let (type, isOptional) = columns[column]
                    column = column + 1 == width ? 0 : column + 1
                    switch value {
                    case .null: guard isOptional else { return false }
                    case .double(let d):
                        guard type == .double, !d.isNaN, d != 0 || d.sign == .plus else { return false }
                    default: guard value.type == type else { return false }
                    }
                }
                return true
            }
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
